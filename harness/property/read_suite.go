package property

import (
	"context"

	"github.com/kvharness/kvharness/harness/check"
	"github.com/kvharness/kvharness/harness/layout"
	"github.com/kvharness/kvharness/harness/oracle"
	"github.com/kvharness/kvharness/harness/plugin"
	"github.com/kvharness/kvharness/harness/pool"
	"github.com/kvharness/kvharness/harness/protocol/kvpb"
)

// ReadLabel is the Label of every read verdict: reads have no padding
// conventions, one row per layout.
const ReadLabel = "read"

// ReadSuite runs the read properties for one plugin over layouts: per
// layout, Cases generated read cases, each checked twice for readonly,
// scratch, score, result and determinism.
type ReadSuite struct {
	Plugin         *plugin.Plugin
	Dir            *pool.Dir
	Variant        string
	Layouts        []*layout.Layout
	Cases          int
	Seed           int64
	Slots          int
	MaxRequests    int // per case; default 8
	MaxTokens      int // all lists of a case; default 256
	MaxK           int // default 64
	BackgroundSeed int64
	Backend        check.Backend // nil: host shared memory
	Options        oracle.ReadOptions
	MaxFaults      int // see Config.MaxFaults
	// StopAtFirst ends the suite at the first failing layout.
	StopAtFirst bool
}

// Run runs every layout; it stops early on a plugin fault.
func (s *ReadSuite) Run(ctx context.Context) ([]Verdict, error) {
	var out []Verdict
	for i, l := range s.Layouts {
		t, err := check.OpenRead(ctx, s.Plugin, s.Dir, check.ReadConfig{Variant: s.Variant, Layout: l, Slots: s.Slots,
			MaxRequests: s.MaxRequests, MaxTokens: s.MaxTokens, MaxK: s.MaxK, Seed: s.BackgroundSeed,
			Backend: s.Backend, Options: s.Options})
		if err != nil {
			return out, err
		}
		seed := s.Seed + int64(i)
		o := Run(ctx, NewReads(t), Config{Cases: s.Cases, Seed: seed, MaxFaults: s.MaxFaults})
		t.Close(ctx)
		out = append(out, Verdict{Layout: l, Label: ReadLabel, Seed: seed, Outcome: o})
		if o.Fault != nil || (s.StopAtFirst && !o.Passed()) {
			return out, o.Fault
		}
	}
	return out, nil
}

// IsReadVariant reports whether a described variant is a read mutant: run
// ReadSuite against it, not the store Suite, where it would survive.
func IsReadVariant(v *kvpb.Variant) bool { return v.GetKernel() == "read" }

// ReadVariants lists a plugin's read mutants, in the order it describes
// them.
func ReadVariants(d *kvpb.DescribeResponse) []*kvpb.Variant {
	var out []*kvpb.Variant
	for _, v := range d.Variants {
		if IsReadVariant(v) {
			out = append(out, v)
		}
	}
	return out
}

// ServesReads reports whether a plugin describes a read kernel.
func ServesReads(d *kvpb.DescribeResponse) bool {
	for _, k := range d.Kernels {
		if k == "read" {
			return true
		}
	}
	return false
}
