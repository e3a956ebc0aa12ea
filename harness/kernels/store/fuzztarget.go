package store

import (
	"context"
	"slices"

	"github.com/kvharness/kvharness/harness/arena"
	"github.com/kvharness/kvharness/harness/fuzzing"
	"github.com/kvharness/kvharness/harness/layout"
	"github.com/kvharness/kvharness/harness/plugin"
	"github.com/kvharness/kvharness/harness/rundir"
)

// Geometry of the fuzzed pool: slots past 16 bits (a kernel that narrows
// loc to uint16 aliases them), pages by the thousand. The pools are filled
// lazily (lazy.go), so a case costs what its rows touch, not the pool.
const (
	fuzzSlots       = 1 << 17
	fuzzPageSize    = 64
	fuzzMaxCapacity = 64
)

// fuzzLayouts is the order the input's first byte picks layouts in.
var fuzzLayouts = []string{"bf16", "fp8-paged", "fp8-rows", "dsv4-main"}

// FuzzTarget is FuzzStore's: a store case on pools of every layout the
// plugin stores.
var FuzzTarget = &fuzzing.Target[*Target, *Case, *Result]{
	Name: "FuzzStore", Package: "./harness/kernels/store",
	Plugin: "fusedstore", Layouts: fuzzLayouts, PageSize: fuzzPageSize,
	Open: func(ctx context.Context, p *plugin.Plugin, dir *rundir.Dir, l *layout.Layout, variant string) (*Target, error) {
		return Open(ctx, p, dir, fuzzConfig(l, variant))
	},
	OpenAll: func(ctx context.Context, p *plugin.Plugin, dir *rundir.Dir, ls []*layout.Layout, variant string) ([]**Target, error) {
		return OpenSupported(ctx, p, dir, ls, func(l *layout.Layout) Config { return fuzzConfig(l, variant) })
	},
	Decode:   func(data []byte) *Case { return Decode(data, fuzzSlots, fuzzPageSize, fuzzMaxCapacity) },
	Write:    WriteCase,
	Features: func(c *Case) []string { return Features(c, fuzzSlots, fuzzPageSize) },
}

func fuzzConfig(l *layout.Layout, variant string) Config {
	return Config{Backend: arena.SHM{}, Variant: variant, Layout: l, Slots: fuzzSlots, MaxCapacity: fuzzMaxCapacity, Seed: 1}
}

// Features names what a store case over a pool of slots in pages of
// pageSize chose, in the terms the bugs it hunts are told in: the padding,
// how many rows, the kinds of rows, where valid and padded rows' slots
// sit (fuzzing.Positions), and whether a padded row's stale slot is a live
// row's (the incident). A name given twice counts twice: go test -fuzz
// keeps an input that gives one more often than any before it, to a power
// of two.
func Features(c *Case, slots, pageSize int) []string {
	out := []string{"pad=" + c.Padding.String(), fuzzing.Count("valid", c.Valid), fuzzing.Count("padded", c.Capacity()-c.Valid)}
	for _, r := range c.Rows {
		out = append(out, "row="+r.Kind.String())
	}
	for _, loc := range c.Loc[c.Valid:] {
		if slices.Contains(c.Loc[:c.Valid], loc) {
			out = append(out, "padded=live-slot")
		}
	}
	out = append(out, fuzzing.Positions("valid-slot", c.Loc[:c.Valid], int64(slots), int64(pageSize))...)
	return append(out, fuzzing.Positions("padded-slot", c.Loc[c.Valid:], int64(slots), int64(pageSize))...)
}
