package pdasync

import (
	"context"
	"fmt"
	"time"

	"github.com/kvharness/kvharness/harness/arena"
	"github.com/kvharness/kvharness/harness/kind"
	"github.com/kvharness/kvharness/harness/pd"
	"github.com/kvharness/kvharness/harness/plugin"
	"github.com/kvharness/kvharness/harness/results"
	"github.com/kvharness/kvharness/harness/rundir"
)

// BenchCase is a throughput case: rooms of pages consecutive on both
// sides (the prefill's first pages to the decode's), each one component
// of every buffer split into handles, and no steps: the bench opens every
// gate at once.
func BenchCase(g pd.Geometry, rooms, handles int) *Case { return pagesCase(g, g.Pages, rooms, handles) }

// pagesCase is BenchCase over the first pages pages of g.
func pagesCase(g pd.Geometry, pages, rooms, handles int) *Case {
	c := &Case{Geometry: g}
	per := pages / rooms
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
	if err := t.release(); err != nil {
		return BenchResult{}, err
	}
	if err := t.materialize(c); err != nil {
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
	return arena.TimeCopy(t.DecodeBackend, t.da.Mem(), 0, t.PrefillBackend, t.pa.Mem(), 0, n)
}

// Bench is how kvharness bench measures pdasync engines: the unit's pages
// of every buffer moved in rooms from the prefill process's arena into
// the decode process's, from the moment every gate opens to the last
// handle's notification, beside one copy of the same bytes between the
// two arenas in the harness's process (the roofline; a peer copy when they
// live on two GPUs). The harness times both (Target.Bench), and judges
// each unit's first transfer: one that is fast and wrong is an error, not
// a figure. A unit's tokens are the tokens of every pool moved: whole
// pages.
var Bench = kind.Bench{
	Modes:    kind.EagerHotPerLaunch.Modes,
	Caches:   kind.EagerHotPerLaunch.Caches,
	Timings:  kind.EagerHotPerLaunch.Timings,
	Copy:     true,
	Tokens:   func(_ bool, pageSize int) []int { return kind.PageTokens(pageSize, pd.MaxTransferPages) },
	Validate: func(s kind.BenchSetup) error { return kind.WholePages(s, "a pdasync transfer", pd.MaxTransferPages) },
	Groups: func(_ *plugin.Description, s kind.BenchSetup) ([]kind.BenchGroup, error) {
		g, err := benchNight(s)
		if err != nil {
			return nil, err
		}
		l, err := g.Layout(0)
		if err != nil {
			return nil, err
		}
		return []kind.BenchGroup{{Name: "kv+state+indexk", HeadDim: s.HeadDim, PageSize: s.PageSize, Layout: l, About: g.String()}}, nil
	},
	Open: openBench,
	Bytes: func(_ kind.BenchGroup, id results.Identity) int64 {
		g, err := sizedBench(id.Tokens, id.PageSize, id.HeadDim)
		if err != nil {
			return 0
		}
		n := 0
		for i := range g.Buffers {
			if l, err := g.Layout(i); err == nil {
				n += l.PageBytes()
			}
		}
		return int64(n * id.Tokens / id.PageSize)
	},
}

// sizedBench is the default layers and buffers with room for tokens
// tokens a pool in pages of pageSize, at least 8 pages.
func sizedBench(tokens, pageSize, headDim int) (pd.Geometry, error) {
	return pd.SizedGeometry(Name, DefaultLayers, max(tokens/pageSize, 8), pageSize, headDim)
}

// benchNight is the geometry of a night: room for its largest unit.
func benchNight(s kind.BenchSetup) (pd.Geometry, error) {
	return sizedBench(s.MaxTokens(), s.PageSize, s.HeadDim)
}

// benchTarget times a night's transfers on a pair of processes: the
// plugin as prefill, a process spawned from it as decode, one target.
type benchTarget struct {
	sys     *System
	t       *Target
	judged  map[int]bool // units whose first transfer was judged
	release func()
}

func openBench(ctx context.Context, pl *plugin.Plugin, dir *rundir.Dir, _ kind.BenchGroup, s kind.BenchSetup) (kind.BenchTarget, error) {
	g, err := benchNight(s)
	if err != nil {
		return nil, err
	}
	decode, release, err := NextGPU(s.Backend)
	if err != nil {
		return nil, err
	}
	sys, err := Spawned(ctx, pl, dir, Config{Variant: s.Variant, Seed: s.Seed, PrefillBackend: s.Backend, DecodeBackend: decode}, nil)
	if err != nil {
		release()
		return nil, err
	}
	t, err := sys.Target(ctx, g)
	if err != nil {
		sys.Close(ctx)
		release()
		return nil, err
	}
	return &benchTarget{sys: sys, t: t, judged: map[int]bool{}, release: release}, nil
}

// Time implements kind.BenchTarget: per sample, one transfer of the
// unit's pages (the engine's time) or its reference copy.
func (b *benchTarget) Time(ctx context.Context, id results.Identity, c kind.Chunk) (kind.Timed, error) {
	if c.Batched {
		return kind.Timed{}, fmt.Errorf("pdasync benches time each transfer: no batched timing")
	}
	pages := max(id.Tokens/b.t.Geometry.PageSize, 1)
	rooms := 16
	for pages%rooms != 0 {
		rooms /= 2 // every page in a room: the bytes moved are the unit's
	}
	bc := pagesCase(b.t.Geometry, pages, rooms, min(4, pages/rooms))
	out := kind.Timed{Device: "cpu"}
	if p := b.t.PrefillBackend.Place(); p.OnDevice() {
		out.Device = p.Device
	}
	for i := range c.Warmup + c.Iterations {
		d, err := b.one(ctx, id, bc, pages)
		if err != nil {
			return kind.Timed{}, err
		}
		if i >= c.Warmup {
			out.Ns = append(out.Ns, float64(d.Nanoseconds()))
		}
	}
	return out, nil
}

// one is one sample: the engine's transfer of bc (the unit's first one
// judged), or the copy of as many bytes.
func (b *benchTarget) one(ctx context.Context, id results.Identity, bc *Case, pages int) (time.Duration, error) {
	if id.Kernel == results.KernelCopy {
		d, err := b.t.referenceCopy(bc.bytes(b.t.Buffers))
		b.t.clean = false // the next reset restores what the copy left
		return d, err
	}
	r, err := b.t.Bench(ctx, bc, !b.judged[pages])
	b.judged[pages] = err == nil
	return r.Engine, err
}

// Close implements kind.BenchTarget.
func (b *benchTarget) Close(ctx context.Context) {
	b.sys.Close(ctx)
	b.release()
}
