package load

import (
	"context"
	"slices"

	"github.com/kvharness/kvharness/harness/arena"
	"github.com/kvharness/kvharness/harness/fuzzing"
	"github.com/kvharness/kvharness/harness/kind"
	"github.com/kvharness/kvharness/harness/layout"
	"github.com/kvharness/kvharness/harness/plugin"
	"github.com/kvharness/kvharness/harness/rundir"
)

// fuzzBase is the fuzzed geometry: four layers of kv, indexk and scales,
// eight pages of sixteen tokens a pool.
var fuzzBase = DefaultGeometry(DefaultLayers, DefaultPages, 16)

// FuzzTarget is FuzzLoad's: one system over the fuzzed geometry.
var FuzzTarget = &fuzzing.Target[*System, *Case, *Result]{
	Name: "FuzzLoad", Package: "./harness/kernels/load",
	Plugin: "layerload",
	Open: func(ctx context.Context, p *plugin.Plugin, dir *rundir.Dir, _ *layout.Layout, variant string) (*System, error) {
		sys := NewSystem(p, dir, Config{Backend: arena.SHM{}, Variant: variant, Seed: 1, Geometry: fuzzBase}, nil)
		return kind.Warmed(ctx, sys, fuzzBase) // a plugin without loads: ErrUnsupported
	},
	Decode:   func(data []byte) *Case { return Decode(data, fuzzBase) },
	Write:    WriteCase,
	Features: Features,
}

// Features names what a load case chose: its op, how many layers,
// buffers, pages, late copies and inputs, failed copies and held readers;
// which buffers it loads and which are late or fail, whether a late copy
// is the last layer's, whether pages move, whether the consumer reads in
// the buffers' order, whether its layers start past the first, and
// whether a latch holds the copies back.
func Features(c *Case) []string {
	out := []string{"op=" + string(c.Op), fuzzing.Count("layers", c.Layers), fuzzing.Count("buffers", len(c.Buffers)),
		fuzzing.Count("pages", len(c.Pages)), fuzzing.Count("late", len(c.Late)), fuzzing.Count("late-inputs", len(c.LateInputs)),
		fuzzing.Count("failed", len(c.Fail)), fuzzing.Count("readers", len(c.Readers))}
	if !slices.Equal(c.Order, c.Buffers) {
		out = append(out, "order=permuted")
	}
	if c.FirstLayer > 0 {
		out = append(out, "first-layer>0")
	}
	for _, b := range c.Buffers {
		out = append(out, "buffer="+b)
	}
	for _, p := range c.Pages {
		if p.Src != p.Dst {
			out = append(out, "page=moved")
		}
	}
	for _, it := range c.Late {
		out = append(out, "late="+it.Buffer)
		if it.Layer == c.Layers-1 {
			out = append(out, "late=last-layer")
		}
	}
	for _, it := range c.Fail {
		out = append(out, "failed="+it.Buffer)
	}
	if c.NoLatch {
		out = append(out, "latch=none")
	}
	return out
}
