package load

import (
	"context"
	"fmt"
	"strings"

	"github.com/kvharness/kvharness/harness/kind"
	"github.com/kvharness/kvharness/harness/plugin"
	"github.com/kvharness/kvharness/harness/protocol/kvpb"
	"github.com/kvharness/kvharness/harness/results"
	"github.com/kvharness/kvharness/harness/rundir"
)

// Bench is how kvharness bench measures loads: a load of every layer and
// buffer of the unit's pages from the host pool into the device pools,
// the consumer's gates and wait included, beside one plain copy of the
// same bytes from host to device (the roofline), both timed inside the
// plugin by LoadBench (CUDA events on a GPU, the monotonic clock on the
// CPU). A unit's tokens are the tokens of every pool loaded: whole pages.
var Bench = kind.Bench{
	Modes:    kind.EagerHotPerLaunch.Modes,
	Caches:   kind.EagerHotPerLaunch.Caches,
	Timings:  kind.EagerHotPerLaunch.Timings,
	Copy:     true,
	Tokens:   func(_ bool, pageSize int) []int { return kind.PageTokens(pageSize, MaxPages) },
	Validate: func(s kind.BenchSetup) error { return kind.WholePages(s, "a load", MaxPages) },
	Groups: func(_ *plugin.Description, s kind.BenchSetup) ([]kind.BenchGroup, error) {
		g := nightGeometry(s)
		if err := g.Validate(); err != nil {
			return nil, fmt.Errorf("load bench geometry: %w", err)
		}
		l, err := g.Layout(0)
		if err != nil {
			return nil, err
		}
		return []kind.BenchGroup{{Name: geometryName(g), HeadDim: s.HeadDim, PageSize: s.PageSize, Layout: l, About: g.String()}}, nil
	},
	Open: openBench,
	Bytes: func(_ kind.BenchGroup, id results.Identity) int64 {
		return loadBytes(unitGeometry(id.HeadDim, id.PageSize, id.Tokens))
	},
}

// unitGeometry is the geometry of a unit's loads: the default layers and
// buffers (FlagGeometry's, at headDim), whole pages of pageSize tokens for
// tokens a pool.
func unitGeometry(headDim, pageSize, tokens int) Geometry {
	g := FlagGeometry(kind.Params{Setup: kind.Setup{PageSize: pageSize, HeadDim: headDim}})
	g.Pages = max(tokens/pageSize, 1)
	return g
}

// nightGeometry is the geometry of a night's loads: its largest unit's.
func nightGeometry(s kind.BenchSetup) Geometry {
	return unitGeometry(s.HeadDim, s.PageSize, s.MaxTokens())
}

// geometryName names a geometry's cells by its buffers: kv+indexk+scales.
func geometryName(g Geometry) string {
	names := make([]string, len(g.Buffers))
	for i, b := range g.Buffers {
		names[i] = b.Name
	}
	return strings.Join(names, "+")
}

// loadBytes is what one load of every page of every layer and buffer of g
// moves.
func loadBytes(g Geometry) int64 {
	n := int64(0)
	for i := range g.Buffers {
		if l, err := g.Layout(i); err == nil {
			n += int64(l.PageBytes())
		}
	}
	return n * int64(g.Layers*g.Pages)
}

// benchTarget times the loads of a night's group on one target.
type benchTarget struct {
	t *Target
}

func openBench(ctx context.Context, pl *plugin.Plugin, dir *rundir.Dir, _ kind.BenchGroup, s kind.BenchSetup) (kind.BenchTarget, error) {
	t, err := Open(ctx, pl, dir, Config{Variant: s.Variant, Seed: s.Seed, Backend: s.Backend, Geometry: nightGeometry(s)})
	if err != nil {
		return nil, err
	}
	return &benchTarget{t: t}, nil
}

// loadCase loads the first pages of every layer and buffer.
func (b *benchTarget) loadCase(pages int) *Case {
	g := b.t.Geometry
	c := &Case{Geometry: g, Op: OpLoad, Layers: g.Layers}
	for _, buf := range g.Buffers {
		c.Buffers = append(c.Buffers, buf.Name)
	}
	c.Order = canonicalOrder(c.Buffers)
	for i := range pages {
		c.Pages = append(c.Pages, Page{Src: i, Dst: i})
	}
	return c
}

// Time implements kind.BenchTarget: one LoadBench call; a copy cell
// takes the plain copies it times beside the loads.
func (b *benchTarget) Time(ctx context.Context, id results.Identity, c kind.Chunk) (kind.Timed, error) {
	if c.Batched {
		return kind.Timed{}, fmt.Errorf("load benches time each load: no batched timing")
	}
	lc := b.loadCase(max(id.Tokens/b.t.Geometry.PageSize, 1))
	req := &kvpb.LoadBenchRequest{Load: b.t.request(lc, b.t.slots(lc)), Warmup: uint32(c.Warmup), Iterations: uint32(c.Iterations)}
	resp, err := LoadBench(ctx, b.t.Plugin, req)
	if err != nil {
		return kind.Timed{}, err
	}
	ns := resp.LoadNs
	if id.Kernel == results.KernelCopy {
		ns = resp.CopyNs
	}
	return kind.Timed{Ns: ns, Device: resp.Device}, nil
}

// Close implements kind.BenchTarget.
func (b *benchTarget) Close(ctx context.Context) { b.t.Close(ctx) }
