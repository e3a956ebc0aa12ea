package cuda

import (
	"errors"
	"unsafe"
)

// The stream-ordering entry points: cross-stream waits on events, and
// stream memory operations (a stream that waits until a 32-bit word in
// memory reaches a value, or writes one in stream order), and host memory
// registration (pinning) so that copies from it run asynchronously on a
// copy engine. A layer loader gates one stream on another with them, and
// the harness holds a stream with cuStreamWaitValue32 until it releases a
// flag. They are optional: a driver without them runs everything else.
type orderAPI struct {
	cuStreamWaitEvent func(s, e uintptr, flags uint32) Result `sym:"cuStreamWaitEvent"`
	// The _v2 memory operations need no device attribute (CUDA 11.7 and
	// later enable them by default on Linux).
	cuStreamWaitValue32  func(s uintptr, addr uint64, value uint32, flags uint32) Result `sym:"cuStreamWaitValue32_v2"`
	cuStreamWriteValue32 func(s uintptr, addr uint64, value uint32, flags uint32) Result `sym:"cuStreamWriteValue32_v2"`
	cuMemHostRegister    func(p unsafe.Pointer, n uint64, flags uint32) Result           `sym:"cuMemHostRegister_v2"`
	cuMemHostUnregister  func(p unsafe.Pointer) Result                                   `sym:"cuMemHostUnregister"`
}

// Flags of the stream memory operations and of host registration.
const (
	waitValueGEQ         = 0 // CU_STREAM_WAIT_VALUE_GEQ: until (int32)(*addr - value) >= 0
	writeValueDefault    = 0 // CU_STREAM_WRITE_VALUE_DEFAULT
	memHostRegPortable   = 1 // CU_MEMHOSTREGISTER_PORTABLE
	eventDisableTiming   = 2 // CU_EVENT_DISABLE_TIMING
	streamWaitEventFlags = 0 // CU_EVENT_WAIT_DEFAULT
)

// errNoOrder says the driver lacks the stream-ordering entry points.
var errNoOrder = errors.New("cuda: this driver lacks cuStreamWaitEvent, cuStreamWaitValue32_v2 or cuMemHostRegister_v2; update it to CUDA 11.7 or later")

// orderCall is checked with the stream-ordering entry points, or errNoOrder.
func (d *Device) orderCall(op string, f func(o *orderAPI) Result) error {
	return d.call(func(a *driverAPI) error {
		if a.order == nil {
			return errNoOrder
		}
		return check(op, f(a.order))
	})
}

// WaitEvent makes s wait, in stream order, for the work before e's last
// record as of this call. An event never recorded waits for nothing:
// CUDA's semantics, which a gate that waits before the record relies on
// by mistake.
func (s *Stream) WaitEvent(e *Event) error {
	if e == nil {
		return errNilHandle
	}
	return s.dev().orderCall("cuStreamWaitEvent", func(o *orderAPI) Result {
		return o.cuStreamWaitEvent(s.handle(), e.h, streamWaitEventFlags)
	})
}

// WaitValue32 makes s wait until the 32-bit word at p is at least v
// (compared as a wrapping difference, as CU_STREAM_WAIT_VALUE_GEQ does).
// Nothing queued on s after it runs before then.
func (s *Stream) WaitValue32(p Ptr, v uint32) error {
	return s.dev().orderCall("cuStreamWaitValue32", func(o *orderAPI) Result {
		return o.cuStreamWaitValue32(s.handle(), uint64(p), v, waitValueGEQ)
	})
}

// WriteValue32 writes v to the 32-bit word at p in s's order.
func (s *Stream) WriteValue32(p Ptr, v uint32) error {
	return s.dev().orderCall("cuStreamWriteValue32", func(o *orderAPI) Result {
		return o.cuStreamWriteValue32(s.handle(), uint64(p), v, writeValueDefault)
	})
}

// HostRegister pins host memory b (an mmap of shared memory, say) for the
// device, so that copies between it and device memory run asynchronously
// on a copy engine in stream order instead of being staged by the driver.
// b must stay mapped until HostUnregister.
func (d *Device) HostRegister(b []byte) error {
	if len(b) == 0 {
		return d.usable()
	}
	return d.orderCall("cuMemHostRegister", func(o *orderAPI) Result {
		return o.cuMemHostRegister(unsafe.Pointer(&b[0]), uint64(len(b)), memHostRegPortable)
	})
}

// HostUnregister undoes HostRegister.
func (d *Device) HostUnregister(b []byte) error {
	if len(b) == 0 {
		return d.usable()
	}
	return d.orderCall("cuMemHostUnregister", func(o *orderAPI) Result {
		return o.cuMemHostUnregister(unsafe.Pointer(&b[0]))
	})
}

// NewMarker creates an event without timing (CU_EVENT_DISABLE_TIMING):
// cheaper to record and to wait on, for ordering rather than timing.
func (d *Device) NewMarker() (*Event, error) {
	e := &Event{d: d}
	return created(d, e, "cuEventCreate", func(a *driverAPI) Result {
		return a.cuEventCreate(&e.h, eventDisableTiming)
	})
}

// Query reports whether the work before e's last record is done, without
// waiting.
func (e *Event) Query() (bool, error) {
	var done bool
	err := e.dev().call(func(a *driverAPI) error {
		switch r := a.cuEventQuery(e.h); r {
		case success:
			done = true
			return nil
		case resultNotReady:
			return nil
		default:
			return check("cuEventQuery", r)
		}
	})
	return done, err
}
