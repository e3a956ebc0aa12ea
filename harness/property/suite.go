package property

import (
	"context"
	"errors"

	"github.com/kvharness/kvharness/harness/check"
	"github.com/kvharness/kvharness/harness/layout"
	"github.com/kvharness/kvharness/harness/plugin"
	"github.com/kvharness/kvharness/harness/pool"
	"github.com/kvharness/kvharness/harness/workload"
)

// Suite runs the properties for one plugin over layouts × paddings.
type Suite struct {
	Plugin         *plugin.Plugin
	Dir            *pool.Dir
	Variant        string
	Layouts        []*layout.Layout
	Paddings       []workload.Padding
	Cases          int
	Seed           int64
	Slots          int
	MaxCapacity    int
	BackgroundSeed int64
	Backend        check.Backend // nil: host shared memory
	Graph          bool          // replay captured CUDA graphs
	MaxFaults      int           // see Config.MaxFaults
	// StopAtFirst ends the suite at the first failing combination (the
	// mutant runner wants time-to-kill, not a full table).
	StopAtFirst bool
}

// Verdict is the outcome of one combination of a suite: for stores, a
// layout and a padding convention (the Label).
type Verdict struct {
	Layout  *layout.Layout
	Label   string
	Seed    int64
	Outcome *Outcome
}

// Run runs every combination; it stops early on a plugin fault, which
// makes the rest meaningless.
func (s *Suite) Run(ctx context.Context) ([]Verdict, error) {
	var out []Verdict
	for li, l := range s.Layouts {
		t, err := check.Open(ctx, s.Plugin, s.Dir, check.Config{Variant: s.Variant, Layout: l, Slots: s.Slots,
			MaxCapacity: s.MaxCapacity, Seed: s.BackgroundSeed, Backend: s.Backend, Graph: s.Graph})
		if err != nil {
			return out, err
		}
		for pi, p := range s.Paddings {
			seed := s.Seed + int64(li*len(s.Paddings)+pi)
			o := Run(ctx, NewStores(t, p, s.MaxCapacity), Config{Cases: s.Cases, Seed: seed, MaxFaults: s.MaxFaults})
			out = append(out, Verdict{Layout: l, Label: p.String(), Seed: seed, Outcome: o})
			if o.Fault != nil || (s.StopAtFirst && !o.Passed()) {
				t.Close(ctx)
				return out, o.Fault
			}
		}
		t.Close(ctx)
	}
	return out, nil
}

// IsFault reports whether err is a plugin fault rather than a harness error.
func IsFault(err error) bool {
	_, ok := plugin.AsFault(err)
	return ok || errors.Is(err, check.ErrUnsupported)
}
