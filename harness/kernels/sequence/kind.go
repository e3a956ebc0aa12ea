package sequence

import (
	"context"
	"fmt"

	"github.com/kvharness/kvharness/harness/arena"

	"github.com/kvharness/kvharness/harness/fuzzing"
	"github.com/kvharness/kvharness/harness/kind"
	"github.com/kvharness/kvharness/harness/layout"
	"github.com/kvharness/kvharness/harness/plugin"
	"github.com/kvharness/kvharness/harness/property"
	"github.com/kvharness/kvharness/harness/protocol"
	"github.com/kvharness/kvharness/harness/report"
)

// Name is the kind's name: no service of its own, it drives a plugin's
// store kernel.
const Name protocol.Kernel = "sequence"

// Kind is the sequence kind: engine lifecycles over a plugin's kernels.
var Kind = kind.Kind{
	Name:   Name,
	Check:  check,
	Replay: replay,
	Decode: kind.Decoder(Name, func() *Case { return &Case{} }),
	Uses:   []protocol.Kernel{storeKind},
	Traces: true,
	Fuzz:   fuzzing.Lane(FuzzTarget),
}

// The profiles of a suite, a row each.
const (
	// ProfileServe: arrivals, prefix hits, decodes, finishes and aborts.
	ProfileServe = "serve"
	// ProfileOffload: the same with evictions to the host and load-backs.
	ProfileOffload = "offload"
	// ProfileTrace: sequences that start as a recorded trace does.
	ProfileTrace = "trace"
)

// Profiles lists the default rows.
var Profiles = []string{ProfileServe, ProfileOffload}

// Defaults of a check run's geometry.
var (
	DefaultCapacities = []int{1, 2, 4, 8}
	DefaultPages      = 64
)

// FlagGeometry is the geometry a check run's flags ask for: two layers
// (the flags' head dimension and half of it: a second layout follows the
// first in one process), their page size, their slots' pages (at least
// DefaultPages) and the default captured capacities.
func FlagGeometry(p kind.Params) Geometry {
	d := p.HeadDim
	if d == 0 {
		d = layout.DefaultHeadDim
	}
	pages := DefaultPages
	if p.Slots > 0 {
		pages = max(2, p.Slots/p.PageSize)
	}
	return Geometry{HeadDims: []int{d, max(8, d/2/8*8)}, PageSize: p.PageSize, Pages: pages, Capacities: DefaultCapacities}
}

// SuiteConfig shapes a suite beyond the common settings.
type SuiteConfig struct {
	Geometry Geometry // zero: FlagGeometry
	Profiles []string // nil: Profiles (and ProfileTrace with a trace)
	Trace    *Case    // a recorded sequence: a row replays it, and seeds the generator
	Steps    int      // least steps a drawn sequence has; 0: DefaultSteps
	Timing   *Timing
}

// Suite is the sequence properties over profiles, a row and a system each.
func Suite(s *kind.Session, p kind.Params, sc SuiteConfig) (*property.Suite[*System, *Case, *Result], error) {
	g := sc.Geometry
	if len(g.HeadDims) == 0 {
		g = FlagGeometry(p)
	}
	if sc.Trace != nil {
		g = sc.Trace.Geometry
	}
	if err := g.Validate(); err != nil {
		return nil, fmt.Errorf("sequence geometry: %w", err)
	}
	l, err := g.Layout(0)
	if err != nil {
		return nil, err
	}
	profiles := sc.Profiles
	if len(profiles) == 0 && sc.Trace != nil {
		profiles = []string{ProfileTrace}
	}
	suite := kind.NewSuite[*System, *Case, *Result](s, p)
	cfg := Config{Variant: p.Variant, Seed: p.Seed, Backend: p.Backend, Geometry: g, Timing: sc.Timing}
	suite.Rows = kind.ProfileRows[*Case, *Result](l, profiles, Profiles,
		func(ctx context.Context, pl *plugin.Plugin, profile string) (*System, error) {
			g := g
			reads, err := servesRead(ctx, pl, p.Variant, g)
			if err != nil {
				return nil, err
			}
			if sc.Trace == nil {
				if g.Decode, err = servesTransfer(ctx, pl, p.Variant, g); err != nil {
					return nil, err
				}
			}
			gen := &Gen{Geometry: g, Steps: sc.Steps, NoEvict: profile == ProfileServe, Reads: reads}
			if profile == ProfileTrace {
				gen.Trace = sc.Trace
			}
			cfg := cfg
			cfg.Geometry = g
			return kind.Warmed(ctx, NewSystem(pl, s.Dir, cfg, gen), g)
		})
	return suite, nil
}

func check(ctx context.Context, s *kind.Session, p kind.Params) (*report.Run, error) {
	var tr *Case
	if p.Trace != "" {
		var err error
		if tr, err = ReadTrace(p.Trace); err != nil {
			return nil, err
		}
	}
	suite, err := Suite(s, p, SuiteConfig{Trace: tr})
	if err != nil {
		return nil, err
	}
	g := FlagGeometry(p)
	if tr != nil {
		g = tr.Geometry
	}
	return kind.RunSuite(ctx, suite, Schema, p.GeometryHeader(s, g))
}

func replay(ctx context.Context, s *kind.Session, r *report.Repro, l *layout.Layout, b arena.Backend) (*report.Failure, error) {
	c := r.Case.(*Case)
	sys := NewSystem(s.Plugin, s.Dir, Config{Variant: r.Variant, Geometry: c.Geometry, Seed: r.BackgroundSeed, Backend: b}, nil)
	defer sys.Close(ctx)
	return kind.Replay(ctx, sys, Schema, s.ReplayHeader(r, b), r, l, c, string(Name))
}
