package cuda

import (
	"errors"
	"fmt"
	"sync"
)

// Device attributes queried at Open (CUdevice_attribute values).
const (
	attrMultiprocessorCount = 16
	attrComputeMajor        = 75
	attrComputeMinor        = 76
)

// Device is one GPU with its primary context current on a dedicated OS
// thread. Its methods are safe for concurrent use; calls are serialised on
// that thread.
type Device struct {
	ordinal int
	dev     int32
	ctx     uintptr
	api     *driverAPI
	w       *worker

	name         string
	major, minor int
	sms          int
	totalMem     int64

	mu     sync.RWMutex // held for reading by every call, for writing by Close
	closed bool
}

// errNilHandle is returned by methods of a nil *Device, *Stream, *Event and
// so on when a driver exists (without one they return the ErrNoDriver reason
// instead, which is the more useful thing to say).
var errNilHandle = errors.New("cuda: method called on a nil handle; get a Device from cuda.Open and other handles from its methods")

// Open retains device ordinal's primary context on a new dedicated thread.
func Open(ordinal int) (*Device, error) {
	api, err := driver()
	if err != nil {
		return nil, err
	}
	d := &Device{ordinal: ordinal, api: api, w: newWorker()}
	if err := d.w.do(d.init); err != nil {
		d.w.stop()
		return nil, fmt.Errorf("open CUDA device %d: %w", ordinal, err)
	}
	return d, nil
}

// Thread opens d's device again, on a new dedicated thread: a Device of its
// own on the same primary context, so memory allocated through either is
// valid in both, while its calls never queue behind d's. Handles (streams,
// modules, events) stay with the Device that made them. Close it apart
// from d.
func (d *Device) Thread() (*Device, error) {
	if err := d.usable(); err != nil {
		return nil, err
	}
	return Open(d.ordinal)
}

// init runs on the device thread: it makes the primary context current and
// caches the properties that never change.
func (d *Device) init() error {
	a := d.api
	if err := check("cuDeviceGet", a.cuDeviceGet(&d.dev, int32(d.ordinal))); err != nil {
		return err
	}
	if err := check("cuDevicePrimaryCtxRetain", a.cuDevicePrimaryCtxRetain(&d.ctx, d.dev)); err != nil {
		return err
	}
	if err := check("cuCtxSetCurrent", a.cuCtxSetCurrent(d.ctx)); err != nil {
		a.cuDevicePrimaryCtxRelease(d.dev)
		return err
	}
	return d.queryProperties()
}

func (d *Device) queryProperties() error {
	a := d.api
	var buf [256]byte
	if err := check("cuDeviceGetName", a.cuDeviceGetName(&buf[0], int32(len(buf)), d.dev)); err != nil {
		return err
	}
	d.name = goString(&buf[0])
	attrs := []struct {
		attr int32
		dst  *int
	}{{attrComputeMajor, &d.major}, {attrComputeMinor, &d.minor}, {attrMultiprocessorCount, &d.sms}}
	for _, at := range attrs {
		var v int32
		if err := check("cuDeviceGetAttribute", a.cuDeviceGetAttribute(&v, at.attr, d.dev)); err != nil {
			return err
		}
		*at.dst = int(v)
	}
	var total uint64
	if err := check("cuDeviceTotalMem", a.cuDeviceTotalMem(&total, d.dev)); err != nil {
		return err
	}
	d.totalMem = int64(total)
	return nil
}

// usable reports why d cannot take calls: nil, closed, or no driver.
func (d *Device) usable() error {
	if d == nil {
		if _, err := driver(); err != nil {
			return err
		}
		return errNilHandle
	}
	return nil
}

// call runs f on the device thread with the context current. From inside
// Do (or any call), f runs at once: the thread is already the device's and
// the outer call holds the lock.
func (d *Device) call(f func(a *driverAPI) error) error {
	if err := d.usable(); err != nil {
		return err
	}
	if d.w.onThread() {
		return f(d.api)
	}
	d.mu.RLock()
	defer d.mu.RUnlock()
	if d.closed {
		return ErrClosed
	}
	return d.w.do(func() error { return f(d.api) })
}

// object is what a driver object of one device (an Event, Stream, Graph
// or GraphExec, each defined as an object) holds: its device and the
// driver's handle for it.
type object struct {
	d *Device
	h uintptr
}

// dev is o's device; nil for a nil o, whose calls then fail as a nil
// Device's do.
func (o *object) dev() *Device {
	if o == nil {
		return nil
	}
	return o.d
}

// checked runs one driver call on d's thread and turns its status into an
// error naming op: the whole of most methods of a device and its handles.
func (d *Device) checked(op string, f func(a *driverAPI) Result) error {
	return d.call(func(a *driverAPI) error { return check(op, f(a)) })
}

// created returns obj once create, the driver call that fills in obj's
// handle, has succeeded on d's thread; on failure the half-made obj is
// dropped.
func created[T any](d *Device, obj *T, op string, create func(a *driverAPI) Result) (*T, error) {
	if err := d.checked(op, create); err != nil {
		return nil, err
	}
	return obj, nil
}

// Close waits for calls in flight, releases the primary context and stops
// the device thread. Memory, modules, streams and events of a context whose
// last reference is released are freed with it.
func (d *Device) Close() error {
	if err := d.usable(); err != nil {
		return err
	}
	if d.w.onThread() {
		return errors.New("cuda: Device.Close called from inside Do; close the device after Do returns")
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.closed {
		return nil
	}
	err := d.w.do(func() error {
		return check("cuDevicePrimaryCtxRelease", d.api.cuDevicePrimaryCtxRelease(d.dev))
	})
	d.closed = true
	d.w.stop()
	return err
}

// Sync waits for all work on the device to finish (cuCtxSynchronize); it
// reports a kernel fault that asynchronous calls could not.
func (d *Device) Sync() error {
	return d.checked("cuCtxSynchronize", func(a *driverAPI) Result { return a.cuCtxSynchronize() })
}

// InDo reports whether the caller runs inside a Do of d (on its thread).
// Such a caller must not wait for another goroutine that uses d: that
// goroutine's calls queue behind the very Do that waits for them.
func (d *Device) InDo() bool { return d.w.onThread() }

// Trips counts the calls handed to the device thread so far, each a
// goroutine wake-up on both sides; tests of batching compare it before and
// after.
func (d *Device) Trips() uint64 { return d.w.trips.Load() }

// Ordinal is the index passed to Open.
func (d *Device) Ordinal() int { return d.ordinal }

// Name is the marketing name, e.g. "NVIDIA H200".
func (d *Device) Name() string { return d.name }

// ComputeCapability is the SM version, e.g. (9, 0) for Hopper.
func (d *Device) ComputeCapability() (major, minor int) { return d.major, d.minor }

// Arch is the real architecture NVRTC compiles for, e.g. "sm_90".
func (d *Device) Arch() string { return fmt.Sprintf("sm_%d%d", d.major, d.minor) }

// Multiprocessors is the SM count, for sizing grid-stride launches.
func (d *Device) Multiprocessors() int { return d.sms }

// TotalMem is the device memory in bytes.
func (d *Device) TotalMem() int64 { return d.totalMem }
