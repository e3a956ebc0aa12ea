package store

import (
	"context"
	"fmt"
	"math/bits"
	"slices"

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
	return Config{Variant: variant, Layout: l, Slots: fuzzSlots, MaxCapacity: fuzzMaxCapacity, Seed: 1}
}

// Features names what a store case over a pool of slots in pages of
// pageSize chose, in the terms the bugs it hunts are told in: the padding,
// how many rows (to a power of two), the kinds of rows, and for each slot
// where it sits: the pool's first or last slot, a page's first or last,
// next to the previous row's, how many bits it needs (a kernel that
// narrows loc to 16 bits fails past 16), and whether a padded row's
// stale slot is a live row's (the incident). A feature named twice counts
// twice: go test -fuzz keeps an input that names one more often than any
// before it, to a power of two.
func Features(c *Case, slots, pageSize int) []string {
	out := []string{"pad=" + c.Padding.String(),
		fmt.Sprintf("valid<%d", 1<<bits.Len(uint(c.Valid))),
		fmt.Sprintf("padded<%d", 1<<bits.Len(uint(c.Capacity()-c.Valid)))}
	for _, r := range c.Rows {
		out = append(out, "row="+r.Kind.String())
	}
	for i, loc := range c.Loc {
		who := "valid"
		if i >= c.Valid {
			who = "padded"
			if slices.Contains(c.Loc[:c.Valid], loc) {
				out = append(out, "padded=live-slot")
			}
		}
		out = append(out, fmt.Sprintf("%s-slot-bits=%d", who, bits.Len64(uint64(max(loc, 0)))))
		switch {
		case loc < 0:
			out = append(out, who+"-slot=negative")
		case loc == 0:
			out = append(out, who+"-slot=zero")
		case loc == int64(slots-1):
			out = append(out, who+"-slot=last")
		case loc%int64(pageSize) == 0:
			out = append(out, who+"-slot=page-first")
		case loc%int64(pageSize) == int64(pageSize-1):
			out = append(out, who+"-slot=page-last")
		}
		if i > 0 && loc == c.Loc[i-1]+1 {
			out = append(out, who+"-slot=next")
		}
	}
	return out
}
