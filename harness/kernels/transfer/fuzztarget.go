package transfer

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

// The fuzzed transfer geometry: two DeepSeek-V4-like layers of 128 pages
// (runs can cross a multiple of 64 pages, a registration chunk).
// Inputs choose a subset of its buffers, up to fuzzMaxRooms rooms of up to
// fuzzMaxPages pages each (Decode).
const (
	fuzzPages    = 128
	fuzzMaxRooms = 4
	fuzzMaxPages = 8
)

var fuzzBase = pd.DefaultGeometry(2, fuzzPages)

// FuzzTarget is FuzzTransfer's: one system over the fuzzed geometry, each
// case over the buffers it picks.
var FuzzTarget = &fuzzing.Target[*System, *Case, *Result]{
	Name: "FuzzTransfer", Package: "./harness/kernels/transfer",
	Plugin: "pdtransfer",
	Open: func(ctx context.Context, p *plugin.Plugin, dir *rundir.Dir, _ *layout.Layout, variant string) (*System, error) {
		sys := NewSystem(p, dir, Config{Backend: arena.SHM{}, Variant: variant, Seed: 1}, nil)
		return kind.Warmed(ctx, sys, fuzzBase) // a plugin without transfers: ErrUnsupported
	},
	Decode:   func(data []byte) *Case { return Decode(data, fuzzBase, fuzzMaxRooms, fuzzMaxPages) },
	Write:    WriteCase,
	Features: Features,
}

// Features names what a transfer case chose: how many rooms and pages,
// and where each room's source and destination pages sit among the
// geometry's pages in registration chunks of 64 (a run that crosses a
// chunk is where a descriptor splits).
func Features(c *Case) []string {
	out := []string{fuzzing.Count("rooms", len(c.Rooms)), fuzzing.Count("buffers", len(c.Geometry.Buffers))}
	pages := int64(c.Geometry.Pages)
	for _, r := range c.Rooms {
		out = append(out, fuzzing.Count("pages", len(r.Src)))
		out = append(out, fuzzing.Positions("src", r.Src, pages, 64)...)
		out = append(out, fuzzing.Positions("dst", r.Dst, pages, 64)...)
	}
	return out
}
