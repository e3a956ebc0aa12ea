package read

import (
	"context"

	"github.com/kvharness/kvharness/harness/fuzzing"
	"github.com/kvharness/kvharness/harness/layout"
	"github.com/kvharness/kvharness/harness/plugin"
	"github.com/kvharness/kvharness/harness/rundir"
)

// The fuzzed pool and staging: a few requests of short lists, so a case
// costs a fraction of a millisecond.
const (
	fuzzSlots    = 1024
	fuzzPageSize = 64
)

var fuzzLimits = Limits{Slots: fuzzSlots, PageSize: fuzzPageSize, MaxRequests: 4, MaxK: 16, MaxList: 32, MaxTokens: 64}

// fuzzLayouts is the order the input's first byte picks layouts in.
var fuzzLayouts = []string{"bf16", "fp8-paged", "fp8-rows"}

// FuzzTarget is FuzzRead's: a read case on a pool of every layout the
// plugin reads.
var FuzzTarget = &fuzzing.Target[*Target, *Case, *Result]{
	Name: "FuzzRead", Package: "./harness/kernels/read",
	Plugin: "fusedstore", Layouts: fuzzLayouts, PageSize: fuzzPageSize,
	Open: func(ctx context.Context, p *plugin.Plugin, dir *rundir.Dir, l *layout.Layout, variant string) (*Target, error) {
		return Open(ctx, p, dir, Config{Variant: variant, Layout: l, Slots: fuzzSlots, MaxRequests: fuzzLimits.MaxRequests,
			MaxTokens: fuzzLimits.MaxTokens, MaxK: fuzzLimits.MaxK, Seed: 1})
	},
	Decode: func(data []byte) *Case { return Decode(data, fuzzLimits) },
	Write:  WriteCase,
}
