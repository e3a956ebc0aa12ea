package transfer

import (
	"context"
	"encoding/json"

	"github.com/kvharness/kvharness/harness/arena"
	"github.com/kvharness/kvharness/harness/fuzzing"
	"github.com/kvharness/kvharness/harness/kind"
	"github.com/kvharness/kvharness/harness/layout"
	"github.com/kvharness/kvharness/harness/pd"
	"github.com/kvharness/kvharness/harness/plugin"
	"github.com/kvharness/kvharness/harness/property"
	"github.com/kvharness/kvharness/harness/report"
	"github.com/kvharness/kvharness/harness/workload"
)

// Kind is the transfer kernel kind: rooms' pages copied from prefill
// pools to decode pools, buffer by buffer, as descriptors.
var Kind = kind.Kind{
	Name:   Name,
	Check:  check,
	Replay: replay,
	Decode: func(data json.RawMessage, slots int) (workload.Case, error) {
		c, err := kind.DecodeCase(Name, data, slots, &Case{})
		if err == nil {
			err = c.Geometry.Validate()
		}
		return c, err
	},
	Fuzz: fuzzing.Lane(FuzzTarget),
	// A transfer gets 256 pages by default, so runs cross multiples of 64
	// pages.
	Slots:     func(_ arena.Place, pageSize int) int { return 256 * pageSize },
	SlotsHelp: "transfers 256 pages",
	Bench:     &Bench,
}

// The default transfer geometry of a suite: two DeepSeek-V4-like layers
// (bf16 KV, a state carved from its allocation, fp8-paged index-K on its
// own page table) of 40 pages a pool. Small enough for thousands of cases
// a minute, large enough for long runs, page-table wraps and several rooms.
const (
	DefaultLayers = 2
	DefaultPages  = 40
)

// SuiteConfig shapes a transfer suite beyond the common settings.
type SuiteConfig struct {
	Geometry pd.Geometry // zero: DefaultGeometry(DefaultLayers, DefaultPages)
	Profiles []string    // nil: Profiles
	MaxRooms int         // rooms per case at most; 0: the generator's default (4)
	// Shapes, when set, is each profile's head dim and page size: its
	// row runs over Geometry reshaped to it (a check draws them).
	Shapes map[string]workload.Shape
	// Far runs the edges row over pools that reach past 4 GiB of byte
	// offsets (pd.FarPages), and draws its pages at 2 GiB and 4 GiB too.
	Far bool
}

// geometryOf is a profile's geometry: g, reshaped to the profile's shape
// when sc gives one, and far for the edges row when sc reaches far.
func (sc SuiteConfig) geometryOf(g pd.Geometry, profile string) pd.Geometry {
	if x, ok := sc.Shapes[profile]; ok {
		g = g.Reshaped(x.HeadDim, x.PageSize)
	}
	if sc.Far && profile == ProfileEdges {
		g = g.Far()
	}
	return g
}

// Suite is the transfer properties over profiles (mixed, runs, singles,
// edges), one row and one system each, over one geometry; every row's
// layout is the first buffer's.
func Suite(s *kind.Session, p kind.Params, sc SuiteConfig) (*property.Suite[*System, *Case, *Result], error) {
	g, l, err := pd.SuiteGeometry(sc.Geometry, DefaultLayers, DefaultPages)
	if err != nil {
		return nil, err
	}
	suite := kind.NewSuite[*System, *Case, *Result](s, p)
	suite.Stress = p.Stress
	cfg := Config{Variant: p.Variant, Seed: p.Seed, Backend: p.Backend}
	suite.Rows = kind.ProfileRows[*Case, *Result](l, sc.Profiles, Profiles,
		func(ctx context.Context, pl *plugin.Plugin, profile string) (*System, error) {
			g := sc.geometryOf(g, profile)
			sys := NewSystem(pl, s.Dir, cfg, &Gen{Geometry: g, Profile: profile, MaxRooms: sc.MaxRooms})
			return kind.Warmed(ctx, sys, g)
		})
	for i, r := range suite.Rows {
		if suite.Rows[i].Layout, err = sc.geometryOf(g, r.Label).Layout(0); err != nil {
			return nil, err
		}
	}
	return suite, nil
}

// FlagGeometry is the geometry a check run's flags ask for: the default
// layers, with as many pages as the flags' slots fill (at least 8), their
// page size and head dimension.
func FlagGeometry(p kind.Params) (pd.Geometry, error) {
	return pd.SizedGeometry(Name, DefaultLayers, max(p.Slots/p.PageSize, 8), p.PageSize, p.HeadDim)
}

func check(ctx context.Context, s *kind.Session, p kind.Params) (*report.Run, error) {
	g, err := FlagGeometry(p)
	if err != nil {
		return nil, err
	}
	sc, sh, err := shapes(ctx, s, p, g, SuiteConfig{Geometry: g, Far: pd.Reaches(p, s)})
	if err != nil {
		return nil, err
	}
	suite, err := Suite(s, p, sc)
	if err != nil {
		return nil, err
	}
	h := pd.Header(p, s, g, sh)
	if h.Far = sc.Far; h.Far {
		h.Coverage = append(h.Coverage, pd.FarLine(p.Place().OnDevice()))
	}
	return kind.RunSuite(ctx, suite, Schema, h)
}

// shapes draws each profile's shape over g's layouts, when the run draws
// them.
func shapes(ctx context.Context, s *kind.Session, p kind.Params, g pd.Geometry, sc SuiteConfig) (SuiteConfig, *kind.Shapes, error) {
	ls, err := g.Layouts()
	if err != nil {
		return sc, nil, err
	}
	sh, err := p.Spaces(ctx, s, ls)
	if err != nil {
		return sc, nil, err
	}
	sc.Shapes, err = sh.Profiles(ctx, s, p, ls, sc.Profiles, Profiles)
	return sc, sh, err
}

func replay(ctx context.Context, s *kind.Session, r *report.Repro, l *layout.Layout, b arena.Backend) (*report.Failure, error) {
	c := r.Case.(*Case)
	sys := NewSystem(s.Plugin, s.Dir, Config{Variant: r.Variant, Geometry: c.Geometry, Seed: r.BackgroundSeed, Backend: b}, nil)
	defer sys.Close(ctx)
	return kind.Replay(ctx, sys, Schema, s.ReplayHeader(r, b), r, l, c, string(Name))
}
