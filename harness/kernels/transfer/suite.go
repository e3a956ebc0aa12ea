package transfer

import (
	"context"

	"github.com/kvharness/kvharness/harness/check"
	"github.com/kvharness/kvharness/harness/plugin"
	"github.com/kvharness/kvharness/harness/rundir"
	"github.com/kvharness/kvharness/harness/workload"
)

// The default transfer geometry of a suite: two DeepSeek-V4-like layers
// (bf16 KV, a state carved from its allocation, fp8-paged index-K on its
// own page table) of 40 pages a pool. Small enough for thousands of cases
// a minute, large enough for long runs, page-table wraps and several rooms.
const (
	DefaultTransferLayers = 2
	DefaultTransferPages  = 40
)

// TransferSuite runs the transfer properties for one plugin: one row per
// profile (mixed, runs, singles, edges) over one geometry. It is the
// transfer twin of Suite, and its verdicts print and save the same way.
type TransferSuite struct {
	Plugin         *plugin.Plugin
	Dir            *rundir.Dir
	Variant        string
	Geometry       workload.TransferGeometry // zero: DefaultTransferGeometry(DefaultTransferLayers, DefaultTransferPages)
	Profiles       []string                  // nil: workload.TransferProfiles
	Cases          int
	Seed           int64
	BackgroundSeed int64
	MaxRooms       int           // rooms per case at most; 0: the generator's default (4)
	Backend        check.Backend // nil: host shared memory
	MaxFaults      int           // see Config.MaxFaults
	// StopAtFirst ends the suite at the first failing row (the mutant
	// runner wants time-to-kill, not a full table).
	StopAtFirst bool

	systems []*Transfers
}

// Run runs every profile; it stops early on a plugin fault. Each verdict's
// Layout is the first buffer's layout and its Label the profile.
func (s *TransferSuite) Run(ctx context.Context) ([]Verdict, error) {
	g := s.geometry()
	l, err := g.Layout(0)
	if err != nil {
		return nil, err
	}
	var out []Verdict
	for i, profile := range s.profiles() {
		sys := NewTransfers(s.Plugin, s.Dir, check.TransferConfig{Variant: s.Variant, Seed: s.BackgroundSeed, Backend: s.Backend},
			&workload.TransferGen{Geometry: g, Profile: profile, MaxRooms: s.MaxRooms})
		s.systems = append(s.systems, sys)
		if _, err := sys.Target(ctx, g); err != nil {
			return out, err
		}
		seed := s.Seed + int64(i)
		o := Run(ctx, sys, Config{Cases: s.Cases, Seed: seed, MaxFaults: s.MaxFaults})
		sys.Close(ctx)
		out = append(out, Verdict{Layout: l, Label: profile, Seed: seed, Outcome: o})
		if o.Fault != nil || (s.StopAtFirst && !o.Passed()) {
			return out, o.Fault
		}
	}
	return out, nil
}

func (s *TransferSuite) geometry() workload.TransferGeometry {
	if len(s.Geometry.Buffers) == 0 {
		return workload.DefaultTransferGeometry(DefaultTransferLayers, DefaultTransferPages)
	}
	return s.Geometry
}

func (s *TransferSuite) profiles() []string {
	if len(s.Profiles) == 0 {
		return workload.TransferProfiles
	}
	return s.Profiles
}

// Details returns the transfer result behind a verdict's result (its
// Failure's Original, Minimal or Rerun): the violations located by room,
// buffer, page and descriptor, the descriptors and the room digests.
func (s *TransferSuite) Details(r *check.Result) (*check.TransferResult, bool) {
	for _, sys := range s.systems {
		if res, ok := sys.Details(r); ok {
			return res, true
		}
	}
	return nil, false
}
