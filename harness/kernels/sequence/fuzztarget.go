package sequence

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

// fuzzBase is the fuzzed geometry: two layers (head dims 64 and 32),
// 24 pages of 4 tokens, graphs captured at 1, 2, 4 and 8, and a decode
// side (the harness moves pages itself for a plugin without a transfer
// kernel).
var fuzzBase = Geometry{HeadDims: []int{64, 32}, PageSize: 4, Pages: 24, Capacities: []int{1, 2, 4, 8}, Decode: true}

// FuzzTarget is FuzzSequence's: one system over the fuzzed geometry.
var FuzzTarget = &fuzzing.Target[*System, *Case, *Result]{
	Name: "FuzzSequence", Package: "./harness/kernels/sequence",
	Plugin: "fusedstore",
	Open: func(ctx context.Context, p *plugin.Plugin, dir *rundir.Dir, _ *layout.Layout, variant string) (*System, error) {
		return kind.Warmed(ctx, NewSystem(p, dir, Config{Backend: arena.SHM{}, Variant: variant, Seed: 1, Geometry: fuzzBase}, nil), fuzzBase)
	},
	Decode:   func(data []byte) *Case { return Decode(data, fuzzBase) },
	Write:    WriteCase,
	Features: Features,
}

// Features names what a sequence chose: its ops, how many steps and
// requests, whether a batch pads its graph, whether a prefix is shared
// and copied on write, whether a freed page is reused.
func Features(c *Case) []string {
	out := []string{fuzzing.Count("steps", len(c.Steps)), fuzzing.Count("requests", c.Requests())}
	seen := map[string]bool{}
	add := func(f string) {
		if !seen[f] {
			seen[f] = true
			out = append(out, f)
		}
	}
	m := newModel(c.Geometry)
	freed := map[int]bool{}
	for i, s := range c.Steps {
		add("op=" + string(s.Op))
		p, err := m.plan(i, s)
		if err != nil {
			break
		}
		if s.Op == OpDecode && p.store.Capacity > len(s.Batch) {
			add("graph=padded")
		}
		if slices.ContainsFunc(s.Arrivals(), func(a Arrival) bool { return a.From != 0 }) {
			add("prefix=shared")
		}
		if len(s.More) > 0 {
			add("arrive=batched")
		}
		if len(p.cows) > 0 {
			add("prefix=copy-on-write")
		}
		for _, pg := range p.alloc {
			if freed[pg] {
				add("page=reused")
			}
		}
		for _, pg := range p.frees {
			freed[pg] = true
		}
		m.apply(p)
	}
	return out
}
