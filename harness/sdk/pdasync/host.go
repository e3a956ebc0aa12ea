package pdasync

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/kvharness/kvharness/harness/sdk"
)

// Gate values: the harness holds a handle, lets it run, or fails it.
const (
	gateHeld = 0
	gateGo   = 1
	gateFail = 2
)

// hostTransport runs the handles of the host backend: one watcher
// goroutine polls the gate word of every held handle in the prefill
// arena's gate window and, as each opens, copies that handle's
// descriptors from the prefill arena into the decode arena on a goroutine
// of its own, so that handles land in whatever order the harness opens
// them. A failed handle lands the first half of its copies, as a transfer
// that broke half way does, and then reports failure.
type hostTransport struct {
	src, dst []byte // the prefill arena (region 0) and the decode arena (region 1)
	gates    []byte // the gate sdk.Window, in src

	mu       sync.Mutex
	held     []*hostXfer // posted, gate not yet seen open
	watching bool
	cancel   atomic.Bool
	wg       sync.WaitGroup // the watcher and every copy
	live     []*Xfer
	posted   []*hostXfer // every handle posted since the last drain
}

// hostXfer is one posted handle of the host transport.
type hostXfer struct {
	gate  *uint32
	ds    []sdk.Descriptor
	state atomic.Int32 // an XferState
}

func (t *hostTransport) post(handle uint32, ds []sdk.Descriptor) (*Xfer, error) {
	if int(handle) >= len(t.gates)/4 {
		return nil, fmt.Errorf("handle %d: the gate window holds %d gates", handle, len(t.gates)/4)
	}
	if err := inRegions(ds, len(t.src), len(t.dst)); err != nil {
		return nil, err
	}
	hx := &hostXfer{gate: (*uint32)(unsafe.Pointer(&t.gates[4*handle])), ds: append([]sdk.Descriptor(nil), ds...)}
	t.mu.Lock()
	t.held = append(t.held, hx)
	if !t.watching {
		t.watching = true
		t.wg.Add(1)
		go t.watch()
	}
	t.mu.Unlock()
	x := &Xfer{Handle: handle, check: func() (XferState, error) { return XferState(hx.state.Load()), nil }}
	t.live = append(t.live, x)
	t.posted = append(t.posted, hx)
	return x, nil
}

// quiet implements transport: a handle whose gate is set is pending until
// its copies ran.
func (t *hostTransport) quiet() (bool, error) {
	for _, hx := range t.posted {
		if atomic.LoadUint32(hx.gate) != gateHeld && XferState(hx.state.Load()) == XferPending {
			return false, nil
		}
	}
	return true, nil
}

// watch polls the held handles' gates until none is held, spinning
// briefly after progress and sleeping longer while nothing moves.
func (t *hostTransport) watch() {
	defer t.wg.Done()
	idle := 0
	for {
		t.mu.Lock()
		opened, left := t.scan()
		if left == 0 && len(opened) == 0 {
			t.watching = false
			t.mu.Unlock()
			return
		}
		t.mu.Unlock()
		for _, hx := range opened {
			t.wg.Add(1)
			go func() {
				defer t.wg.Done()
				hx.state.Store(int32(t.run(hx)))
			}()
		}
		if len(opened) > 0 {
			idle = 0
		}
		idle++
		if idle > 64 {
			time.Sleep(min(time.Duration(idle-64)*time.Microsecond, 100*time.Microsecond))
		}
	}
}

// scan takes the handles whose gates opened (every one, when cancelled)
// off the held list; t.mu is held.
func (t *hostTransport) scan() (opened []*hostXfer, left int) {
	cancel := t.cancel.Load()
	keep := t.held[:0]
	for _, hx := range t.held {
		if cancel || atomic.LoadUint32(hx.gate) != gateHeld {
			opened = append(opened, hx)
		} else {
			keep = append(keep, hx)
		}
	}
	t.held = keep
	return opened, len(keep)
}

// run copies a handle whose gate opened; it returns its final state.
func (t *hostTransport) run(hx *hostXfer) XferState {
	v := atomic.LoadUint32(hx.gate)
	if v == gateHeld { // cancelled: the harness never opened it
		return XferFailed
	}
	n := len(hx.ds)
	if v == gateFail {
		n /= 2
	}
	for _, d := range hx.ds[:n] {
		copy(t.dst[d.Dst:d.Dst+d.Length], t.src[d.Src:d.Src+d.Length])
	}
	if v == gateFail {
		return XferFailed
	}
	return XferDone
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
	t.live, t.posted = nil, nil
	return err
}

func (t *hostTransport) pending() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return len(t.held)
}

func (t *hostTransport) close() error { return t.drain(context.Background()) }

// inRegions checks that every descriptor reads inside a source region of
// srcSize bytes and writes inside a destination region of dstSize bytes.
func inRegions(ds []sdk.Descriptor, srcSize, dstSize int) error {
	for i, d := range ds {
		if d.Length < 0 || d.Src < 0 || d.Dst < 0 || d.Src > srcSize-d.Length || d.Dst > dstSize-d.Length {
			return fmt.Errorf("descriptor %d %+v leaves the arenas (prefill %d bytes, decode %d bytes)", i, d, srcSize, dstSize)
		}
	}
	return nil
}
