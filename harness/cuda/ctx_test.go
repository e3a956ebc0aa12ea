package cuda

import (
	"errors"
	"strings"
	"sync"
	"testing"
	"time"
	"unsafe"
)

// fakeDriver stands in for libcuda on any machine: each entry point logs
// its name and the OS thread it was called on.
type fakeDriver struct {
	mu   sync.Mutex
	ops  []string
	tids map[int64]bool
	args [][]uint64 // the parameter values of each launch
}

func (f *fakeDriver) log(op string) Result {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.ops = append(f.ops, op)
	f.tids[threadID()] = true
	return success
}

func (f *fakeDriver) take() (ops []string, threads int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	ops, threads = f.ops, len(f.tids)
	f.ops, f.tids = nil, map[int64]bool{}
	return ops, threads
}

// fakeDevice is a Device whose driver is a fakeDriver.
func fakeDevice(t *testing.T, ordinal int) (*Device, *fakeDriver) {
	fd := &fakeDriver{tids: map[int64]bool{}}
	a := &driverAPI{
		cuLaunchKernel: func(_ uintptr, _, _, _, _, _, _, _ uint32, _ uintptr, params, _ unsafe.Pointer) Result {
			var vals []uint64
			if params != nil {
				for _, p := range unsafe.Slice((*unsafe.Pointer)(params), 2) {
					vals = append(vals, *(*uint64)(p))
				}
			}
			fd.mu.Lock()
			fd.args = append(fd.args, vals)
			fd.mu.Unlock()
			return fd.log("launch")
		},
		cuEventRecord:       func(_, _ uintptr) Result { return fd.log("record") },
		cuEventSynchronize:  func(uintptr) Result { return fd.log("event-sync") },
		cuEventElapsedTime:  func(ms *float32, _, _ uintptr) Result { *ms = 0.25; return fd.log("elapsed") },
		cuStreamSynchronize: func(uintptr) Result { return fd.log("stream-sync") },
		cuCtxSynchronize:    func() Result { return fd.log("ctx-sync") },
		cuGraphLaunch:       func(_, _ uintptr) Result { return fd.log("graph-launch") },
		cuMemcpyHtoDAsync:   func(uint64, unsafe.Pointer, uint64, uintptr) Result { return fd.log("htod") },
		cuMemcpyDtoHAsync:   func(unsafe.Pointer, uint64, uint64, uintptr) Result { return fd.log("dtoh") },
		cuMemcpyDtoDAsync:   func(_, _, _ uint64, _ uintptr) Result { return fd.log("dtod") },
		cuMemsetD8Async:     func(uint64, uint8, uint64, uintptr) Result { return fd.log("memset") },
		cuDevicePrimaryCtxRelease: func(int32) Result {
			return fd.log("release")
		},
	}
	d := &Device{ordinal: ordinal, api: a, w: newWorker()}
	t.Cleanup(func() { d.Close() })
	return d, fd
}

// TestDoOneTrip: a sequence of driver calls made inside Do, through the
// Ctx or through the ordinary methods, costs one handoff to the device
// thread and runs there, in order.
func TestDoOneTrip(t *testing.T) {
	d, fd := fakeDevice(t, 0)
	s, e := &Stream{d: d, h: 1}, &Event{d: d, h: 2}
	f := &Function{m: &Module{d: d}, name: "k"}
	x := &GraphExec{d: d, h: 3}
	before := d.w.trips.Load()
	var el time.Duration
	var tid int64
	err := d.Do(func(c *Ctx) error {
		tid = threadID()
		if c.Device() != d {
			t.Error("Ctx.Device is not the device")
		}
		steps := []error{
			c.HtoDAsync(s, 1, []byte{1, 2, 3, 4}),
			c.Record(e, s),
			c.Launch(f, s, Dim3{X: 2}, Dim3{X: 32}, 0, Ptr(7), int64(-3)),
			f.Launch(s, Dim3{X: 1}, Dim3{X: 1}, 0, uint64(9), int64(10)), // an ordinary method, nested
			c.GraphLaunch(x, s),
			x.Launch(s),
			e.Record(s),
			c.DtoDAsync(s, 1, 2, 8),
			c.Memset8Async(s, 1, 0, 8),
			s.Sync(),
			c.StreamSync(s),
			c.EventSync(e),
			c.Sync(),
		}
		if err := errors.Join(steps...); err != nil {
			return err
		}
		var err error
		el, err = c.Elapsed(e, e)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	if trips := d.w.trips.Load() - before; trips != 1 {
		t.Errorf("Do with 15 driver calls took %d trips to the device thread; want 1", trips)
	}
	tids := fd.tids
	ops, threads := fd.take()
	want := "htod record launch launch graph-launch graph-launch record dtod memset stream-sync stream-sync event-sync ctx-sync event-sync elapsed"
	if got := strings.Join(ops, " "); got != want {
		t.Errorf("driver calls\n got %s\nwant %s", got, want)
	}
	if threads != 1 || !tids[tid] {
		t.Errorf("calls ran on %d threads; want the device thread only", threads)
	}
	if el != 250*time.Microsecond {
		t.Errorf("Elapsed = %v; want 250µs", el)
	}
	if len(fd.args) != 2 || fd.args[0][0] != 7 || int64(fd.args[0][1]) != -3 || fd.args[1][0] != 9 || fd.args[1][1] != 10 {
		t.Errorf("launch arguments = %v; want [[7 -3] [9 10]]", fd.args)
	}
}

// TestDoRunsOnDeviceThread: f runs on the thread every other call of the
// device uses, and ordinary calls outside Do still work, one trip each.
func TestDoRunsOnDeviceThread(t *testing.T) {
	d, fd := fakeDevice(t, 0)
	var inDo int64
	must(t, d.Do(func(*Ctx) error { inDo = threadID(); return nil }))
	s := &Stream{d: d, h: 1}
	before := d.w.trips.Load()
	must(t, s.Sync())
	must(t, s.Sync())
	if trips := d.w.trips.Load() - before; trips != 2 {
		t.Errorf("two calls outside Do took %d trips; want 2", trips)
	}
	fd.mu.Lock()
	defer fd.mu.Unlock()
	if len(fd.tids) != 1 || !fd.tids[inDo] {
		t.Errorf("calls outside Do ran on %v; Do ran on %d", fd.tids, inDo)
	}
}

func TestDoNested(t *testing.T) {
	d, _ := fakeDevice(t, 0)
	before := d.w.trips.Load()
	depth := 0
	must(t, d.Do(func(c *Ctx) error {
		return d.Do(func(c2 *Ctx) error {
			depth = 2
			return c2.Sync()
		})
	}))
	if depth != 2 || d.w.trips.Load()-before != 1 {
		t.Errorf("nested Do: depth %d, %d trips", depth, d.w.trips.Load()-before)
	}
}

// TestDoHoldsOtherCallers: a call from another goroutine waits until Do
// returns, so nothing lands between the calls Do makes.
func TestDoHoldsOtherCallers(t *testing.T) {
	d, fd := fakeDevice(t, 0)
	s := &Stream{d: d, h: 1}
	started := make(chan struct{})
	other := make(chan error)
	must(t, d.Do(func(c *Ctx) error {
		go func() {
			close(started)
			other <- c.d.Sync()
		}()
		<-started
		time.Sleep(20 * time.Millisecond) // give the other call every chance to cut in
		return errors.Join(c.StreamSync(s), c.StreamSync(s))
	}))
	must(t, <-other)
	ops, _ := fd.take()
	if got := strings.Join(ops, " "); got != "stream-sync stream-sync ctx-sync" {
		t.Errorf("driver calls %q: another goroutine's call ran inside Do", got)
	}
}

func TestDoErrorsAndPanics(t *testing.T) {
	d, _ := fakeDevice(t, 0)
	boom := errors.New("boom")
	if err := d.Do(func(*Ctx) error { return boom }); !errors.Is(err, boom) {
		t.Errorf("Do = %v; want f's error", err)
	}
	var kept *Ctx
	must(t, d.Do(func(c *Ctx) error { kept = c; return nil }))
	if err := kept.Sync(); !errors.Is(err, errCtxDone) {
		t.Errorf("Ctx used after Do: %v; want errCtxDone", err)
	}
	other, _ := fakeDevice(t, 1)
	err := d.Do(func(c *Ctx) error { return c.Record(&Event{d: other, h: 1}, nil) })
	if err == nil || !strings.Contains(err.Error(), "device 1") {
		t.Errorf("recording another device's event: %v", err)
	}
	if err := d.Do(func(*Ctx) error { return d.Close() }); err == nil {
		t.Error("Close inside Do succeeded")
	}
	if err := d.Do(func(c *Ctx) error { return c.Launch(nil, nil, Dim3{}, Dim3{}, 0) }); err == nil {
		t.Error("launching a nil function succeeded")
	}
	if err := d.Do(func(c *Ctx) error {
		return c.Launch(&Function{m: &Module{d: d}, name: "k"}, nil, Dim3{}, Dim3{}, 0, 1)
	}); err == nil || !strings.Contains(err.Error(), "argument 0") {
		t.Errorf("launching with an int argument: %v", err)
	}
	defer func() {
		if p := recover(); p == nil || !strings.Contains(p.(string), "inner") {
			t.Errorf("panic in Do = %v; want it re-raised", p)
		}
	}()
	_ = d.Do(func(*Ctx) error { panic("inner") })
}
