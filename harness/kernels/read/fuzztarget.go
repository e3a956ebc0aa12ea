package read

import (
	"context"

	"github.com/kvharness/kvharness/harness/arena"
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
		return Open(ctx, p, dir, Config{Backend: arena.SHM{}, Variant: variant, Layout: l, Slots: fuzzSlots, MaxRequests: fuzzLimits.MaxRequests,
			MaxTokens: fuzzLimits.MaxTokens, MaxK: fuzzLimits.MaxK, Seed: 1})
	},
	Decode:   func(data []byte) *Case { return Decode(data, fuzzLimits) },
	Write:    WriteCase,
	Features: func(c *Case) []string { return Features(c, fuzzSlots, fuzzPageSize) },
}

// Features names what a read case chose: k against each list's length
// (fewer tokens than k, exactly k, more), the lists' and requests'
// counts, the query and key kinds, keys that tie with the previous one,
// tokens an earlier request named too, and where the tokens' slots sit.
func Features(c *Case, slots, pageSize int) []string {
	out := []string{fuzzing.Count("k", c.K), fuzzing.Count("requests", len(c.Requests))}
	seen := map[int64]bool{}
	for _, q := range c.Requests {
		out = append(out, "query="+q.Query.Kind.String(), fuzzing.Count("list", len(q.Tokens)))
		switch {
		case len(q.Tokens) < c.K:
			out = append(out, "list<k")
		case len(q.Tokens) == c.K:
			out = append(out, "list=k")
		}
		for _, tok := range q.Tokens {
			if seen[tok] {
				out = append(out, "token=shared")
			}
		}
		for _, tok := range q.Tokens {
			seen[tok] = true
		}
		out = append(out, fuzzing.Positions("slot", q.Tokens, int64(slots), int64(pageSize))...)
	}
	for i, k := range c.Keys {
		out = append(out, "key="+k.Kind.String())
		if i > 0 && k.Vec == c.Keys[i-1].Vec {
			out = append(out, "key=tie")
		}
	}
	return out
}
