package pdasync

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/kvharness/kvharness/harness/cuda"
	"github.com/kvharness/kvharness/harness/sdk"
)

// deviceTransport runs each handle on a CUDA stream of its own, so that
// any handle the harness opens runs whatever the others wait for: the
// stream waits for the handle's gate word (cuStreamWaitValue32 on the
// prefill arena, which the harness writes from its own process), then
// copies the handle's descriptors with cuMemcpyDtoDAsync from the prefill
// arena into the decode arena, mapped in this process by IPC (a peer
// mapping when it lives on another GPU: the copies then cross NVLink),
// then records an event. A handle is done when its event is reached; it
// failed when its gate then says so. A failed handle's copies land in
// whole: a stream cannot branch on the gate, and the protocol allows a
// failed handle to land any part of its copies before it reports.
//
// A held stream blocks the hardware queue it is mapped to, and a stream
// beyond the context's queues shares one with an earlier stream: an
// opened handle behind a held one would wait for it. So the transport
// never makes more streams than the context has queues (Serve raises them
// to CUDA's maximum of 32, sdk.DeviceQueues), and holds at most a quarter
// fewer handles behind their gates on the GPU, keeping streams for handles
// the harness opens. A handle beyond that waits in this process: the
// transport reads the gate window whenever it is asked for a state and
// queues the handle's copies, without a gate wait, once its gate is set.
type deviceTransport struct {
	dev      *cuda.Device
	src, dst cuda.Ptr // the two arenas' bases, in this process
	srcSize  int
	dstSize  int
	gates    cuda.Ptr // gate 0
	nGates   int
	queues   int // the most streams: the context's hardware queues
	streams  int // streams made so far
	free     []*cuda.Stream
	held     int           // handles queued behind their gate waits, not ended
	waiting  []*deviceXfer // posted, not queued on a stream yet
	live     []*deviceXfer
}

// deviceXfer is a posted handle: its descriptors until they are queued,
// then its stream and event until it ends.
type deviceXfer struct {
	x      *Xfer
	handle uint32
	ds     []sdk.Descriptor // until queued
	stream *cuda.Stream
	event  *cuda.Event
	gate   cuda.Ptr
	gated  bool // queued behind the gate wait: it counts in held
	queued bool
	ended  bool
}

// maxHeld is how many handles may wait for their gates on the GPU: all the
// queues but a quarter (at least one), which stay for opened handles.
func (t *deviceTransport) maxHeld() int { return t.queues - max(1, t.queues/4) }

func (t *deviceTransport) post(handle uint32, ds []sdk.Descriptor) (*Xfer, error) {
	if int(handle) >= t.nGates {
		return nil, fmt.Errorf("handle %d: the gate window holds %d gates", handle, t.nGates)
	}
	if err := inRegions(ds, t.srcSize, t.dstSize); err != nil {
		return nil, err
	}
	dx := &deviceXfer{handle: handle, ds: slices.Clone(ds), gate: t.gates.Add(4 * int(handle))}
	dx.x = &Xfer{Handle: handle, check: func() (XferState, error) { return t.check(dx) }}
	t.waiting = append(t.waiting, dx)
	t.live = append(t.live, dx)
	if err := t.dev.Do(func(*cuda.Ctx) error { return t.pump() }); err != nil {
		return nil, err
	}
	return dx.x, nil
}

// pump queues the waiting handles that can go on a stream now: behind
// their gate waits while fewer than maxHeld are held, else once the gate
// window says the harness set their gates. The rest wait on.
func (t *deviceTransport) pump() error {
	var gates []byte // the sdk.Window, read once a pump when needed
	keep := t.waiting[:0]
	for _, dx := range t.waiting {
		gated := t.held < t.maxHeld()
		if !gated {
			if gates == nil {
				gates = make([]byte, 4*t.nGates)
				if err := t.dev.DtoH(gates, t.gates); err != nil {
					return fmt.Errorf("read the gate window: %w", err)
				}
			}
			if binary.LittleEndian.Uint32(gates[4*dx.handle:]) == gateHeld {
				keep = append(keep, dx)
				continue
			}
		}
		s, err := t.stream()
		if err != nil {
			return err
		}
		if s == nil { // every stream busy: opened handles free them
			keep = append(keep, dx)
			continue
		}
		if err := t.enqueue(dx, s, gated); err != nil {
			return fmt.Errorf("handle %d: %w", dx.handle, err)
		}
	}
	clear(t.waiting[len(keep):])
	t.waiting = keep
	return nil
}

// enqueue queues the gate wait (when gated), the copies and the event on
// stream s.
func (t *deviceTransport) enqueue(dx *deviceXfer, s *cuda.Stream, gated bool) error {
	dx.stream, dx.queued, dx.gated = s, true, gated
	if gated {
		t.held++
	}
	var err error
	if dx.event, err = t.dev.NewEvent(); err != nil {
		return err
	}
	if gated {
		if err := s.WaitGE32(dx.gate, gateGo); err != nil {
			return fmt.Errorf("hold the handle behind its gate: %w", err)
		}
	}
	for i, d := range dx.ds {
		if err := s.DtoDAsync(t.dst.Add(d.Dst), t.src.Add(d.Src), d.Length); err != nil {
			return fmt.Errorf("descriptor %d: %w", i, err)
		}
	}
	dx.ds = nil
	return dx.event.Record(s)
}

// stream is a free stream, a new one while fewer than queues exist, or
// nil.
func (t *deviceTransport) stream() (*cuda.Stream, error) {
	if n := len(t.free); n > 0 {
		s := t.free[n-1]
		t.free = t.free[:n-1]
		return s, nil
	}
	if t.streams >= t.queues {
		return nil, nil
	}
	s, err := t.dev.NewStream()
	if err == nil {
		t.streams++
	}
	return s, err
}

// check asks whether the handle's event is reached and, once it is, what
// its gate said; the stream goes back to the pool. A handle still waiting
// in this process is pending, after a pump.
func (t *deviceTransport) check(dx *deviceXfer) (XferState, error) {
	var reached bool
	var gate [4]byte
	err := t.dev.Do(func(c *cuda.Ctx) error {
		if err := t.pump(); err != nil || !dx.queued {
			return err
		}
		var err error
		if reached, err = c.Reached(dx.event); err != nil || !reached {
			return err
		}
		return t.dev.DtoH(gate[:], dx.gate)
	})
	if err != nil || !reached {
		return XferPending, err
	}
	t.end(dx)
	if binary.LittleEndian.Uint32(gate[:]) == gateFail {
		return XferFailed, nil
	}
	return XferDone, nil
}

// quiet implements transport: a handle whose gate the window shows set is
// pending until its event is reached.
func (t *deviceTransport) quiet() (bool, error) {
	gates := make([]byte, 4*t.nGates)
	if err := t.dev.DtoH(gates, t.gates); err != nil {
		return false, fmt.Errorf("read the gate window: %w", err)
	}
	for _, dx := range t.live {
		if dx.ended || binary.LittleEndian.Uint32(gates[4*dx.handle:]) == gateHeld {
			continue
		}
		if s, err := dx.x.State(); err != nil || s == XferPending {
			return false, err
		}
	}
	return true, nil
}

// end returns a finished handle's stream and frees its event.
func (t *deviceTransport) end(dx *deviceXfer) {
	if dx.ended {
		return
	}
	dx.ended = true
	if dx.gated {
		t.held--
	}
	t.free = append(t.free, dx.stream)
	dx.event.Destroy()
}

// drain waits for every handle's event. A stream whose gate the harness
// never opened cannot be cancelled: after drainTimeout the transport
// reports it, and the harness restarts the plugin (its context goes, and
// the held copies with it).
func (t *deviceTransport) drain(ctx context.Context) error {
	deadline := time.Now().Add(drainTimeout)
	for _, dx := range t.live {
		for !dx.ended {
			if _, err := dx.x.State(); err != nil {
				return err
			}
			if dx.ended {
				break
			}
			if time.Now().After(deadline) || ctx.Err() != nil {
				return errors.Join(ctx.Err(), fmt.Errorf("handle %d still held %v after the reset: the harness opens every gate first", dx.x.Handle, drainTimeout))
			}
			time.Sleep(20 * time.Microsecond)
		}
	}
	t.live = nil
	return nil
}

func (t *deviceTransport) close() error {
	err := t.drain(context.Background())
	for _, s := range t.free {
		err = errors.Join(err, s.Destroy())
	}
	t.free = nil
	return err
}
