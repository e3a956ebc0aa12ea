package load

import (
	"context"

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
		sys := NewSystem(p, dir, Config{Variant: variant, Seed: 1, Geometry: fuzzBase}, nil)
		return kind.Warmed(ctx, sys, fuzzBase) // a plugin without loads: ErrUnsupported
	},
	Decode: func(data []byte) *Case { return Decode(data, fuzzBase) },
	Write:  WriteCase,
}
