package sdk

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"
)

// Gate values: the harness holds a handle, lets it run, or fails it.
const (
	gateHeld = 0
	gateGo   = 1
	gateFail = 2
)

// hostTransport runs each handle on a goroutine of its own: it waits for
// the handle's gate word in the prefill arena's gate window, then copies
// the handle's descriptors from the prefill arena into the decode arena.
// A failed handle lands the first half of its copies, as a transfer that
// broke half way does, and then reports failure.
type hostTransport struct {
	src, dst []byte // the prefill arena (region 0) and the decode arena (region 1)
	gates    []byte // the gate window, in src
	cancel   atomic.Bool
	wg       sync.WaitGroup
	live     []*Xfer
}

func (t *hostTransport) post(handle uint32, ds []Descriptor) (*Xfer, error) {
	if int(handle) >= len(t.gates)/4 {
		return nil, fmt.Errorf("handle %d: the gate window holds %d gates", handle, len(t.gates)/4)
	}
	if err := inRegions(ds, len(t.src), len(t.dst)); err != nil {
		return nil, err
	}
	var state atomic.Int32
	gate := (*uint32)(unsafe.Pointer(&t.gates[4*handle]))
	ds = append([]Descriptor(nil), ds...)
	t.wg.Add(1)
	go func() {
		defer t.wg.Done()
		state.Store(int32(t.run(gate, ds)))
	}()
	x := &Xfer{Handle: handle, check: func() (XferState, error) { return XferState(state.Load()), nil }}
	t.live = append(t.live, x)
	return x, nil
}

// run waits for the gate and copies; it returns the handle's final state.
func (t *hostTransport) run(gate *uint32, ds []Descriptor) XferState {
	v := waitGate(gate, &t.cancel)
	if v == gateHeld { // cancelled: the harness never opened it
		return XferFailed
	}
	n := len(ds)
	if v == gateFail {
		n /= 2
	}
	for _, d := range ds[:n] {
		copy(t.dst[d.Dst:d.Dst+d.Length], t.src[d.Src:d.Src+d.Length])
	}
	if v == gateFail {
		return XferFailed
	}
	return XferDone
}

// waitGate polls a gate until it leaves gateHeld or cancel is set,
// spinning briefly and then sleeping, so a held handle costs little.
func waitGate(gate *uint32, cancel *atomic.Bool) uint32 {
	sleep := time.Microsecond
	for i := 0; ; i++ {
		if v := atomic.LoadUint32(gate); v != gateHeld {
			return v
		}
		if cancel.Load() {
			return gateHeld
		}
		if i < 64 {
			continue
		}
		time.Sleep(sleep)
		sleep = min(2*sleep, 500*time.Microsecond)
	}
}

// drainTimeout bounds how long a reset waits for handles: the harness
// opens every gate before it resets, so a handle still held after this
// is a harness bug, and the handle is cancelled rather than left to land
// in the next case.
const drainTimeout = 10 * time.Second

func (t *hostTransport) drain(ctx context.Context) error {
	done := make(chan struct{})
	go func() { t.wg.Wait(); close(done) }()
	var err error
	select {
	case <-done:
	case <-time.After(drainTimeout):
		err = fmt.Errorf("%d handles still held %v after the reset: the harness opens every gate first", t.pending(), drainTimeout)
	case <-ctx.Done():
		err = ctx.Err()
	}
	if err != nil {
		t.cancel.Store(true)
		<-done
		t.cancel.Store(false)
	}
	t.live = nil
	return err
}

func (t *hostTransport) pending() int {
	n := 0
	for _, x := range t.live {
		if s, _ := x.State(); s == XferPending {
			n++
		}
	}
	return n
}

func (t *hostTransport) close() error { return t.drain(context.Background()) }

// inRegions checks that every descriptor reads inside a source region of
// srcSize bytes and writes inside a destination region of dstSize bytes.
func inRegions(ds []Descriptor, srcSize, dstSize int) error {
	for i, d := range ds {
		if d.Length < 0 || d.Src < 0 || d.Dst < 0 || d.Src > srcSize-d.Length || d.Dst > dstSize-d.Length {
			return fmt.Errorf("descriptor %d %+v leaves the arenas (prefill %d bytes, decode %d bytes)", i, d, srcSize, dstSize)
		}
	}
	return nil
}
