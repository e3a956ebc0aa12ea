package pdasync

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/kvharness/kvharness/harness/arena"
	"github.com/kvharness/kvharness/harness/cuda"
	"github.com/kvharness/kvharness/harness/pd"
)

// BenchCase is a throughput case: rooms of pages consecutive on both
// sides (the prefill's first pages to the decode's), each one component
// of every buffer split into handles, and no steps: the bench opens every
// gate at once.
func BenchCase(g pd.Geometry, rooms, handles int) *Case {
	c := &Case{Geometry: g}
	per := g.Pages / rooms
	var bufs []int
	for b := range g.Buffers {
		bufs = append(bufs, b)
	}
	for r := range rooms {
		room := Room{ID: uint64(r)}
		for i := range per {
			room.Src = append(room.Src, int64(r*per+i))
			room.Virt = append(room.Virt, int64(r*per+i))
		}
		comp := Component{Buffers: bufs}
		for h := range handles {
			lo, hi := h*per/handles, (h+1)*per/handles
			comp.Handles = append(comp.Handles, Handle{First: lo, Pages: hi - lo})
		}
		room.Components = []Component{comp}
		c.Rooms = append(c.Rooms, room)
	}
	return c
}

// BenchResult is one timed transfer: the bytes a case moves, how long the
// engine took from the moment every gate opened to the last handle's
// notification, and how long one copy of as many bytes takes from the
// prefill arena to the decode arena in the harness's own process (a
// memmove between the two mappings; on a GPU one cuMemcpyDtoDAsync, a
// peer copy when the arenas live on two GPUs).
type BenchResult struct {
	Bytes             int
	Engine, Reference time.Duration
}

// GBps is bytes per nanosecond: GB/s.
func GBps(bytes int, d time.Duration) float64 { return float64(bytes) / float64(d.Nanoseconds()) }

// Bench admits and posts every room of c, opens every gate at once, times
// the engine until every handle is told, then (with judge) drains and
// judges the run: a transfer that is fast and wrong is an error, not a
// figure. A bench judges its first run; later runs of the same case time
// only, so that the host's checks (backgrounds and digests of every page)
// do not dominate a large one.
func (t *Target) Bench(ctx context.Context, c *Case, judge bool) (BenchResult, error) {
	if err := c.Validate(0); err != nil {
		return BenchResult{}, err
	}
	if err := t.Ensure(ctx); err != nil {
		return BenchResult{}, err
	}
	if err := t.reset(ctx); err != nil {
		return BenchResult{}, err
	}
	r := newRun(ctx, t, c)
	var err error
	if r.image, err = r.readPools(); err != nil {
		return BenchResult{}, err
	}
	r.at = "setup"
	for i := range c.Rooms {
		if err := r.admit(i); err != nil {
			return BenchResult{}, err
		}
	}
	res := BenchResult{Bytes: c.bytes(t.Buffers)}
	his := make([]int, len(r.w.handles))
	for i, h := range r.w.handles {
		his[i], h.gate, h.setAt = i, gateGo, "bench"
	}
	r.at = "bench"
	start := time.Now()
	if err := t.openAll(); err != nil {
		return res, err
	}
	if err := r.await(his); err != nil {
		return res, err
	}
	res.Engine = time.Since(start)
	if judge {
		if err := r.judgeBench(his); err != nil {
			return res, err
		}
	}
	res.Reference, err = t.referenceCopy(res.Bytes)
	t.clean = false // the next reset restores what the copies left
	return res, err
}

// judgeBench finishes a bench run as a case: what landed, the rooms read,
// the arenas restored. Any violation fails the bench.
func (r *run) judgeBench(his []int) error {
	if err := r.observe(his); err != nil {
		return err
	}
	if err := r.drain(); err != nil {
		return err
	}
	if err := r.final(); err != nil {
		return err
	}
	if len(r.res.Violations) > 0 {
		return fmt.Errorf("the benched transfer is wrong: %v", r.res.Violations[0])
	}
	return nil
}

// bytes is what a case moves: every page of every room in every buffer.
func (c *Case) bytes(bufs []pd.BufferPools) int {
	n := 0
	for _, r := range c.Rooms {
		for _, b := range bufs {
			n += len(r.Src) * b.PageBytes
		}
	}
	return n
}

// referenceCopy times one copy of n bytes from the start of the prefill
// arena's pools to the start of the decode arena's, in this process, and
// leaves the decode arena for the next reset to restore.
func (t *Target) referenceCopy(n int) (time.Duration, error) {
	n = min(n, t.pPlan.Staging.Off, t.dPlan.Staging.Off)
	src, dst := t.pa.Mem(), t.da.Mem()
	type bytesOf interface{ Bytes() []byte }
	if s, ok := src.(bytesOf); ok {
		d, ok := dst.(bytesOf)
		if !ok {
			return 0, errors.New("reference copy: the decode arena is not host memory like the prefill's")
		}
		start := time.Now()
		copy(d.Bytes()[:n], s.Bytes()[:n])
		return time.Since(start), nil
	}
	return t.deviceCopy(n)
}

// deviceCopy times one device-to-device copy of n bytes between the two
// arenas with CUDA events, on the prefill GPU's stream, with peer access
// enabled when the decode arena lives on another GPU.
func (t *Target) deviceCopy(n int) (time.Duration, error) {
	pc, ok1 := t.PrefillBackend.(arena.CUDA)
	dc, ok2 := t.DecodeBackend.(arena.CUDA)
	sp, ok3 := t.pa.Mem().(interface{ Ptr() cuda.Ptr })
	dp, ok4 := t.da.Mem().(interface{ Ptr() cuda.Ptr })
	if !ok1 || !ok2 || !ok3 || !ok4 {
		return 0, errors.New("reference copy: both arenas must be CUDA arenas")
	}
	dev := pc.Dev
	if err := dev.EnablePeer(dc.Dev); err != nil {
		return 0, fmt.Errorf("reference copy: peer access from GPU %d to GPU %d: %w", dev.Ordinal(), dc.Dev.Ordinal(), err)
	}
	s, err := dev.NewStream()
	if err != nil {
		return 0, err
	}
	defer s.Destroy()
	e0, err := dev.NewEvent()
	if err != nil {
		return 0, err
	}
	defer e0.Destroy()
	e1, err := dev.NewEvent()
	if err != nil {
		return 0, err
	}
	defer e1.Destroy()
	err = errors.Join(e0.Record(s), s.DtoDAsync(dp.Ptr(), sp.Ptr(), n), e1.Record(s))
	if err != nil {
		return 0, err
	}
	return cuda.Elapsed(e0, e1)
}
