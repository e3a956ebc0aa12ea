package cuda

import (
	"errors"
	"fmt"
	"time"
	"unsafe"
)

// Ctx is a device's driver, reached directly from its own thread: each
// method is one driver call, made at once, with no handoff. A Ctx exists
// only while the function given to [Device.Do] runs, and only that
// function's goroutine may use it.
type Ctx struct {
	d    *Device
	a    *driverAPI
	done bool
}

var errCtxDone = errors.New("cuda: Ctx used after its Do returned; make the calls inside the function given to Do")

// Do runs f on the device's thread with its context current, in one trip
// to that thread. Inside f, the calls made through c, and every method of
// this device and of its streams, events, modules, functions and graphs,
// run directly on the thread: a sequence of driver calls (write, launch,
// record, synchronise) costs one handoff instead of one per call, and no
// handoff sits between two calls f makes. Calls from other goroutines
// wait until f returns, so f must not wait for another goroutine that uses
// the device, and must not Close it. Do may be nested. A panic in f is
// re-raised in Do's caller.
func (d *Device) Do(f func(c *Ctx) error) error {
	return d.call(func(a *driverAPI) error {
		c := &Ctx{d: d, a: a}
		defer func() { c.done = true }()
		return f(c)
	})
}

// Device is the device c drives.
func (c *Ctx) Device() *Device { return c.d }

// live checks that c is in its Do and that every handle is of c's device
// (a nil handle, the legacy stream, is of every device).
func (c *Ctx) live(owners ...*Device) error {
	if c == nil || c.done {
		return errCtxDone
	}
	for _, o := range owners {
		if o != nil && o != c.d {
			return fmt.Errorf("cuda: a handle of device %d used through the Ctx of device %d", o.ordinal, c.d.ordinal)
		}
	}
	return nil
}

// checked makes one driver call at once, as [Device.checked] does on the
// device thread, once c is live for owners.
func (c *Ctx) checked(op string, f func(a *driverAPI) Result, owners ...*Device) error {
	if err := c.live(owners...); err != nil {
		return err
	}
	return check(op, f(c.a))
}

// Launch queues f on s (nil: the legacy default stream), as
// [Function.Launch] does.
func (c *Ctx) Launch(f *Function, s *Stream, grid, block Dim3, sharedBytes int, args ...any) error {
	if f == nil {
		return fmt.Errorf("launch %s: %w", f.label(), errNilHandle)
	}
	if err := c.live(f.dev(), s.dev()); err != nil {
		return err
	}
	ka, err := packArgs(args)
	if err != nil {
		return fmt.Errorf("launch %s: %w", f.label(), err)
	}
	g, b := grid.norm(), block.norm()
	if err := f.launch(c.a, s, g, b, sharedBytes, ka); err != nil {
		return fmt.Errorf("launch %s grid %v block %v: %w", f.label(), g, b, err)
	}
	return nil
}

// GraphLaunch replays x on s (nil: the legacy default stream).
func (c *Ctx) GraphLaunch(x *GraphExec, s *Stream) error {
	if x == nil {
		return errNilHandle
	}
	return c.checked("cuGraphLaunch", func(a *driverAPI) Result { return a.cuGraphLaunch(x.h, s.handle()) }, x.d, s.dev())
}

// Record marks the current end of s (nil: the legacy stream) with e.
func (c *Ctx) Record(e *Event, s *Stream) error {
	if e == nil {
		return errNilHandle
	}
	return c.checked("cuEventRecord", func(a *driverAPI) Result { return a.cuEventRecord(e.h, s.handle()) }, e.d, s.dev())
}

// EventSync waits until the work before e's last Record is done.
func (c *Ctx) EventSync(e *Event) error {
	if e == nil {
		return errNilHandle
	}
	return c.checked("cuEventSynchronize", func(a *driverAPI) Result { return a.cuEventSynchronize(e.h) }, e.d)
}

// Reached says whether the GPU has passed e's last Record, without
// waiting. A batched timing uses it to see whether its hold kernel ended
// before the host finished queueing the batch (then the batch ran at the
// host's pace, not the GPU's).
func (c *Ctx) Reached(e *Event) (bool, error) {
	if e == nil {
		return false, errNilHandle
	}
	if err := c.live(e.d); err != nil {
		return false, err
	}
	switch r := c.a.cuEventQuery(e.h); r {
	case 0:
		return true, nil
	case resultNotReady:
		return false, nil
	default:
		return false, check("cuEventQuery", r)
	}
}

// resultNotReady is CUDA_ERROR_NOT_READY: queued work not yet done.
const resultNotReady Result = 600

// Elapsed waits for end, then returns the GPU time between start and end,
// as [Elapsed] does.
func (c *Ctx) Elapsed(start, end *Event) (time.Duration, error) {
	if start == nil || end == nil {
		return 0, errNilHandle
	}
	if err := c.live(start.d, end.d); err != nil {
		return 0, err
	}
	return elapsed(c.a, start, end)
}

// StreamSync waits for all work queued on s (nil: the legacy stream).
func (c *Ctx) StreamSync(s *Stream) error {
	return c.checked("cuStreamSynchronize", func(a *driverAPI) Result { return a.cuStreamSynchronize(s.handle()) }, s.dev())
}

// Sync waits for all work on the device (cuCtxSynchronize).
func (c *Ctx) Sync() error {
	return c.checked("cuCtxSynchronize", func(a *driverAPI) Result { return a.cuCtxSynchronize() })
}

// HtoDAsync copies src to dst in s's order; src may be reused on return
// (see [Stream.HtoDAsync]).
func (c *Ctx) HtoDAsync(s *Stream, dst Ptr, src []byte) error {
	if err := c.live(s.dev()); err != nil || len(src) == 0 {
		return err
	}
	return check("cuMemcpyHtoDAsync", c.a.cuMemcpyHtoDAsync(uint64(dst), unsafe.Pointer(&src[0]), uint64(len(src)), s.handle()))
}

// DtoHAsync copies len(dst) bytes from src in s's order; into Go memory
// it returns once they have arrived (see [Stream.DtoHAsync]).
func (c *Ctx) DtoHAsync(s *Stream, dst []byte, src Ptr) error {
	if err := c.live(s.dev()); err != nil || len(dst) == 0 {
		return err
	}
	return check("cuMemcpyDtoHAsync", c.a.cuMemcpyDtoHAsync(unsafe.Pointer(&dst[0]), uint64(src), uint64(len(dst)), s.handle()))
}

// DtoDAsync copies n bytes between device addresses in s's order.
func (c *Ctx) DtoDAsync(s *Stream, dst, src Ptr, n int) error {
	if n < 0 {
		return fmt.Errorf("cuda: DtoDAsync of %d bytes: size must not be negative", n)
	}
	return c.checked("cuMemcpyDtoDAsync", func(a *driverAPI) Result {
		return a.cuMemcpyDtoDAsync(uint64(dst), uint64(src), uint64(n), s.handle())
	}, s.dev())
}

// Memset8Async sets n bytes at p to v in s's order.
func (c *Ctx) Memset8Async(s *Stream, p Ptr, v byte, n int) error {
	if n < 0 {
		return fmt.Errorf("cuda: Memset8Async of %d bytes: size must not be negative", n)
	}
	return c.checked("cuMemsetD8Async", func(a *driverAPI) Result {
		return a.cuMemsetD8Async(uint64(p), v, uint64(n), s.handle())
	}, s.dev())
}
