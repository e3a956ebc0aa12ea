package transfer

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/kvharness/kvharness/harness/arena"
	"github.com/kvharness/kvharness/harness/kind"
	"github.com/kvharness/kvharness/harness/pd"
	"github.com/kvharness/kvharness/harness/plugin"
	"github.com/kvharness/kvharness/harness/protocol/kvpb"
	"github.com/kvharness/kvharness/harness/results"
	"github.com/kvharness/kvharness/harness/rundir"
)

// Bench is how kvharness bench measures transfers: one Transfer call that
// moves a room of the unit's pages in every buffer from the prefill pools
// to the decode pools, beside a copy of the same bytes in the harness's
// process (the roofline) and a Transfer call of no rooms (the floor: the
// call's round trip). The plugin times nothing itself: each sample is the
// call as the harness sees it, its round trip included, so the floor
// beside it says how much of a small transfer is the call. A unit's tokens
// are the tokens of every pool moved: whole pages.
var Bench = kind.Bench{
	Modes:    kind.EagerHotPerLaunch.Modes,
	Caches:   kind.EagerHotPerLaunch.Caches,
	Timings:  kind.EagerHotPerLaunch.Timings,
	Copy:     true,
	Empty:    true,
	Tokens:   func(_ bool, pageSize int) []int { return kind.PageTokens(pageSize, pd.MaxTransferPages) },
	Validate: func(s kind.BenchSetup) error { return kind.WholePages(s, "a transfer", pd.MaxTransferPages) },
	Groups: func(_ *plugin.Description, s kind.BenchSetup) ([]kind.BenchGroup, error) {
		g, err := nightGeometry(s)
		if err != nil {
			return nil, err
		}
		l, err := g.Layout(0)
		if err != nil {
			return nil, err
		}
		return []kind.BenchGroup{{Name: geometryName(g), HeadDim: s.HeadDim, PageSize: s.PageSize, Layout: l, About: g.String()}}, nil
	},
	Open: openBench,
	Bytes: func(_ kind.BenchGroup, id results.Identity) int64 {
		g, err := sizedGeometry(id.Tokens, id.PageSize, id.HeadDim)
		if err != nil || id.Kernel == results.KernelEmpty {
			return 0
		}
		return int64(roomBytes(g, id.Tokens/id.PageSize))
	},
}

// sizedGeometry is the default layers and buffers with room for tokens
// tokens a pool, in pages of pageSize, and at least 8 pages (as a check's
// geometry has: the index-K page table is shifted by a quarter of them).
func sizedGeometry(tokens, pageSize, headDim int) (pd.Geometry, error) {
	return pd.SizedGeometry(Name, DefaultLayers, max(tokens/pageSize, 8), pageSize, headDim)
}

// nightGeometry is the geometry of a night's transfers: room for its
// largest unit.
func nightGeometry(s kind.BenchSetup) (pd.Geometry, error) {
	return sizedGeometry(s.MaxTokens(), s.PageSize, s.HeadDim)
}

// geometryName names a geometry's cells by one layer's buffers:
// kv+state+indexk.
func geometryName(g pd.Geometry) string {
	var names []string
	for _, b := range g.Buffers {
		if b.Layer == g.Buffers[0].Layer {
			_, name, _ := strings.Cut(b.Name, ".")
			names = append(names, name)
		}
	}
	return strings.Join(names, "+")
}

// roomBytes is what a room of pages pages moves: those pages of every
// buffer.
func roomBytes(g pd.Geometry, pages int) int {
	n := 0
	for i := range g.Buffers {
		if l, err := g.Layout(i); err == nil {
			n += pages * l.PageBytes()
		}
	}
	return n
}

// benchTarget times a night's transfers on one target.
type benchTarget struct {
	t *Target
}

func openBench(ctx context.Context, pl *plugin.Plugin, dir *rundir.Dir, _ kind.BenchGroup, s kind.BenchSetup) (kind.BenchTarget, error) {
	g, err := nightGeometry(s)
	if err != nil {
		return nil, err
	}
	t, err := Open(ctx, pl, dir, Config{Variant: s.Variant, Geometry: g, Seed: s.Seed, Backend: s.Backend})
	if err != nil {
		return nil, err
	}
	if len(t.GeometryViolations) > 0 {
		t.Close(ctx)
		v := t.GeometryViolations[0]
		return nil, fmt.Errorf("plugin %s: buffer %s: %s: its transfers are wrong before they start; kvharness check --kernel transfer shows it", pl.Name, v.Buffer, v.Detail)
	}
	return &benchTarget{t: t}, nil
}

// request is the Transfer call of a unit (unitCase).
func (b *benchTarget) request(id results.Identity) *kvpb.TransferRequest {
	return b.t.Request(unitCase(b.t.Geometry, id))
}

// unitCase is the case of a unit's cell on g: one room moving its first
// pages of every buffer; no room for the floor.
func unitCase(g pd.Geometry, id results.Identity) *Case {
	c := &Case{Geometry: g}
	if id.Kernel != results.KernelEmpty {
		room := Room{ID: 1}
		for p := range max(id.Tokens/g.PageSize, 1) {
			room.Src, room.Dst = append(room.Src, int64(p)), append(room.Dst, int64(p))
		}
		c.Rooms = []Room{room}
	}
	return c
}

// Time implements kind.BenchTarget: per sample, one Transfer call timed by
// the harness (or, for the copy, one copy of the unit's bytes from the
// first source pool to the first destination pool).
func (b *benchTarget) Time(ctx context.Context, id results.Identity, c kind.Chunk) (kind.Timed, error) {
	if c.Batched {
		return kind.Timed{}, fmt.Errorf("transfer benches time each call: no batched timing")
	}
	if err := b.t.Ensure(ctx); err != nil {
		return kind.Timed{}, err
	}
	one := b.call(ctx, b.request(id))
	if id.Kernel == results.KernelCopy {
		one = b.copy(roomBytes(b.t.Geometry, max(id.Tokens/b.t.Geometry.PageSize, 1)))
	}
	for range c.Warmup {
		if _, err := one(); err != nil {
			return kind.Timed{}, err
		}
	}
	out := kind.Timed{Device: b.device()}
	for range c.Iterations {
		d, err := one()
		if err != nil {
			return kind.Timed{}, err
		}
		out.Ns = append(out.Ns, float64(d.Nanoseconds()))
	}
	return out, nil
}

// call is a Transfer call of req, timed.
func (b *benchTarget) call(ctx context.Context, req *kvpb.TransferRequest) func() (time.Duration, error) {
	return func() (time.Duration, error) {
		start := time.Now()
		_, err := Transfer(ctx, b.t.Plugin, req)
		return time.Since(start), err
	}
}

// copy is a copy of n bytes from the source pools' start to the
// destination pools', timed: as many bytes as a room moves, by the
// plainest means.
func (b *benchTarget) copy(n int) func() (time.Duration, error) {
	src, dst := b.t.Pools.Regions[0].Pool.Off, b.t.Pools.Regions[len(b.t.Buffers)].Pool.Off
	n = min(n, dst-src)
	return func() (time.Duration, error) {
		return arena.TimeCopy(b.t.Backend, b.t.Mem(), dst, b.t.Backend, b.t.Mem(), src, n)
	}
}

// device is what runs the transfers: "cpu", or the GPU's name.
func (b *benchTarget) device() string {
	if p := b.t.Backend.Place(); p.OnDevice() {
		return p.Device
	}
	return "cpu"
}

// Close implements kind.BenchTarget.
func (b *benchTarget) Close(ctx context.Context) { b.t.Close(ctx) }
