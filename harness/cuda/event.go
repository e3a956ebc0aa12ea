package cuda

import (
	"errors"
	"time"
)

// Event marks a point in a stream; two recorded events time the work between
// them on the GPU's clock (about 0.5 µs resolution).
type Event object

// NewEvent creates an event with timing enabled (CU_EVENT_DEFAULT).
func (d *Device) NewEvent() (*Event, error) {
	e := &Event{d: d}
	return created(d, e, "cuEventCreate", func(a *driverAPI) Result { return a.cuEventCreate(&e.h, 0) })
}

func (e *Event) dev() *Device { return (*object)(e).dev() }

// Record marks the current end of stream s (nil: the legacy stream).
func (e *Event) Record(s *Stream) error {
	return e.dev().checked("cuEventRecord", func(a *driverAPI) Result { return a.cuEventRecord(e.h, s.handle()) })
}

// Sync waits until the work before the event's last Record is done.
func (e *Event) Sync() error {
	return e.dev().checked("cuEventSynchronize", func(a *driverAPI) Result { return a.cuEventSynchronize(e.h) })
}

// Destroy releases the event.
func (e *Event) Destroy() error {
	return e.dev().checked("cuEventDestroy", func(a *driverAPI) Result { return a.cuEventDestroy(e.h) })
}

// Elapsed is the GPU time between two recorded events of one device. It
// waits for end first, since cuEventElapsedTime fails with NOT_READY on an
// event that has not completed.
func Elapsed(start, end *Event) (time.Duration, error) {
	if start == nil || end == nil {
		return 0, (*Device)(nil).usable()
	}
	if start.d != end.d {
		return 0, errors.New("cuda: Elapsed of events on different devices; record both on one device")
	}
	var d time.Duration
	err := end.dev().call(func(a *driverAPI) (err error) {
		d, err = elapsed(a, start, end)
		return err
	})
	return d, err
}

// elapsed waits for end and reads the time from start, on the device
// thread.
func elapsed(a *driverAPI, start, end *Event) (time.Duration, error) {
	if err := check("cuEventSynchronize", a.cuEventSynchronize(end.h)); err != nil {
		return 0, err
	}
	var ms float32
	if err := check("cuEventElapsedTime", a.cuEventElapsedTime(&ms, start.h, end.h)); err != nil {
		return 0, err
	}
	return time.Duration(float64(ms) * float64(time.Millisecond)), nil
}
