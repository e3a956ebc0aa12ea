package sdk

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"time"

	"github.com/kvharness/kvharness/harness/cuda"
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
// A held stream blocks the hardware queue it is mapped to, so each
// handle needs a queue of its own: Serve raises the context's queues to
// CUDA's maximum of 32 (connections.go). More than 32 handles held at
// once can still share a queue, and an opened handle queued behind a
// held one waits for it.
type deviceTransport struct {
	g        *gpu
	src, dst cuda.Ptr // the two arenas' bases, in this process
	srcSize  int
	dstSize  int
	gates    cuda.Ptr // gate 0
	nGates   int
	free     []*cuda.Stream
	live     []*deviceXfer
}

// deviceXfer is a posted handle's stream and event, until it ends.
type deviceXfer struct {
	x      *Xfer
	stream *cuda.Stream
	event  *cuda.Event
	gate   cuda.Ptr
	ended  bool
}

func (t *deviceTransport) post(handle uint32, ds []Descriptor) (*Xfer, error) {
	if int(handle) >= t.nGates {
		return nil, fmt.Errorf("handle %d: the gate window holds %d gates", handle, t.nGates)
	}
	if err := inRegions(ds, t.srcSize, t.dstSize); err != nil {
		return nil, err
	}
	dx := &deviceXfer{gate: t.gates.Add(4 * int(handle))}
	err := t.g.dev.Do(func(*cuda.Ctx) error { return t.enqueue(dx, ds) })
	if err != nil {
		return nil, err
	}
	dx.x = &Xfer{Handle: handle, check: func() (XferState, error) { return t.check(dx) }}
	t.live = append(t.live, dx)
	return dx.x, nil
}

// enqueue queues the gate wait, the copies and the event on a stream of
// the handle's own.
func (t *deviceTransport) enqueue(dx *deviceXfer, ds []Descriptor) error {
	var err error
	if dx.stream, err = t.stream(); err != nil {
		return err
	}
	if dx.event, err = t.g.dev.NewEvent(); err != nil {
		return err
	}
	if err := dx.stream.WaitGE32(dx.gate, gateGo); err != nil {
		return fmt.Errorf("hold the handle behind its gate: %w", err)
	}
	for i, d := range ds {
		if err := dx.stream.DtoDAsync(t.dst.Add(d.Dst), t.src.Add(d.Src), d.Length); err != nil {
			return fmt.Errorf("descriptor %d: %w", i, err)
		}
	}
	return dx.event.Record(dx.stream)
}

func (t *deviceTransport) stream() (*cuda.Stream, error) {
	if n := len(t.free); n > 0 {
		s := t.free[n-1]
		t.free = t.free[:n-1]
		return s, nil
	}
	return t.g.dev.NewStream()
}

// check asks whether the handle's event is reached and, once it is, what
// its gate said; the stream goes back to the pool.
func (t *deviceTransport) check(dx *deviceXfer) (XferState, error) {
	var reached bool
	var gate [4]byte
	err := t.g.dev.Do(func(c *cuda.Ctx) error {
		var err error
		if reached, err = c.Reached(dx.event); err != nil || !reached {
			return err
		}
		return t.g.dev.DtoH(gate[:], dx.gate)
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

// end returns a finished handle's stream and frees its event.
func (t *deviceTransport) end(dx *deviceXfer) {
	if dx.ended {
		return
	}
	dx.ended = true
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
