package pdasync

import (
	"context"

	"github.com/kvharness/kvharness/harness/arena"
	"github.com/kvharness/kvharness/harness/fuzzing"
	"github.com/kvharness/kvharness/harness/kind"
	"github.com/kvharness/kvharness/harness/layout"
	"github.com/kvharness/kvharness/harness/pd"
	"github.com/kvharness/kvharness/harness/plugin"
	"github.com/kvharness/kvharness/harness/rundir"
)

// fuzzBase is the fuzzed geometry: one DeepSeek-V4-like layer of 12
// pages; inputs choose rooms, plans, a page table and steps over it
// (Decode).
var fuzzBase = pd.DefaultGeometry(1, 12)

// FuzzTarget is FuzzPDAsync's: a system over the fuzzed geometry, its
// decode process spawned beside the prefill one (in process: a second
// server of the bundled plugin's code).
var FuzzTarget = &fuzzing.Target[*System, *Case, *Result]{
	Name: "FuzzPDAsync", Package: "./harness/kernels/pdasync",
	Plugin: "pdasync",
	Open: func(ctx context.Context, p *plugin.Plugin, dir *rundir.Dir, _ *layout.Layout, variant string) (*System, error) {
		decode, err := p.Spawn(ctx) // in process: a second server of the bundled code
		if err != nil {
			return nil, err
		}
		sys := NewSystem(p, decode, dir, Config{PrefillBackend: arena.SHM{}, Variant: variant, Seed: 1}, nil)
		sys.OwnsDecode = true
		return kind.Warmed(ctx, sys, fuzzBase) // a plugin without pdasync: ErrUnsupported
	},
	Decode:   func(data []byte) *Case { return Decode(data, fuzzBase) },
	Write:    WriteCase,
	Features: Features,
}

// Features names what an asynchronous transfer case chose: how many
// rooms, components and handles, rooms that reuse another's pages, a
// compacted page table, and its steps by kind.
func Features(c *Case) []string {
	out := []string{fuzzing.Count("rooms", len(c.Rooms)), fuzzing.Count("steps", len(c.Steps))}
	if len(c.PageTable) > 0 {
		out = append(out, "page-table=compacted")
	}
	for _, r := range c.Rooms {
		out = append(out, fuzzing.Count("components", len(r.Components)), fuzzing.Count("pages", len(r.Src)))
		if r.After != nil {
			out = append(out, "room=reuses")
		}
		for _, comp := range r.Components {
			out = append(out, fuzzing.Count("handles", len(comp.Handles)))
		}
	}
	for _, s := range c.Steps {
		out = append(out, "step="+string(s.Op))
	}
	return out
}
