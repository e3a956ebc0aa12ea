package load

import (
	"context"
	"fmt"

	"github.com/kvharness/kvharness/harness/arena"
	"github.com/kvharness/kvharness/harness/fuzzing"
	"github.com/kvharness/kvharness/harness/kind"
	"github.com/kvharness/kvharness/harness/layout"
	"github.com/kvharness/kvharness/harness/plugin"
	"github.com/kvharness/kvharness/harness/property"
	"github.com/kvharness/kvharness/harness/report"
	"github.com/kvharness/kvharness/harness/workload"
)

// Kind is the load kernel kind: layer loads and stream ordering.
var Kind = kind.Kind{
	Name:   Name,
	Check:  check,
	Replay: replay,
	Decode: kind.Decoder(Name, func() *Case { return &Case{} }),
	Fuzz:   fuzzing.Lane(FuzzTarget),
	Bench:  &Bench,
}

// The default geometry of a suite: four DeepSeek-V4-like layers of kv,
// indexk and scales, eight pages a pool.
const (
	DefaultLayers = 4
	DefaultPages  = 8
)

// SuiteConfig shapes a load suite beyond the common settings.
type SuiteConfig struct {
	Geometry Geometry // zero: DefaultGeometry(DefaultLayers, DefaultPages, the flags' page size)
	Profiles []string // nil: Profiles
	// Shapes, when set, is each profile's head dim and page size: its
	// row runs over Geometry reshaped to it (a check draws them).
	Shapes map[string]workload.Shape
	// Far runs the edges row over pools that reach past 4 GiB of byte
	// offsets (Geometry.Far), its pages drawn at 2 GiB and 4 GiB too.
	Far bool
}

// geometryOf is a profile's geometry: g, reshaped to the profile's shape
// when sc gives one, and far for the edges row when sc reaches far.
func (sc SuiteConfig) geometryOf(g Geometry, profile string) Geometry {
	if x, ok := sc.Shapes[profile]; ok {
		g = g.Reshaped(x.HeadDim, x.PageSize)
	}
	if sc.Far && profile == ProfileEdges {
		g = g.Far()
	}
	return g
}

// Suite is the load properties over profiles, one row and one system
// each, over one geometry; every row's layout is the first buffer's.
func Suite(s *kind.Session, p kind.Params, sc SuiteConfig) (*property.Suite[*System, *Case, *Result], error) {
	g := sc.Geometry
	if len(g.Buffers) == 0 {
		g = FlagGeometry(p)
	}
	if err := g.Validate(); err != nil {
		return nil, fmt.Errorf("load geometry: %w", err)
	}
	l, err := g.Layout(0)
	if err != nil {
		return nil, err
	}
	suite := kind.NewSuite[*System, *Case, *Result](s, p)
	cfg := Config{Variant: p.Variant, Seed: p.Seed, Backend: p.Backend, Geometry: g}
	suite.Rows = kind.ProfileRows[*Case, *Result](l, sc.Profiles, Profiles,
		func(ctx context.Context, pl *plugin.Plugin, profile string) (*System, error) {
			g := sc.geometryOf(g, profile)
			cfg := cfg
			cfg.Geometry = g
			sys := NewSystem(pl, s.Dir, cfg, &Gen{Geometry: g, Profile: profile})
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
// layers and pages, the flags' page size, and their head dimension for the
// KV and index-K buffers.
func FlagGeometry(p kind.Params) Geometry {
	g := DefaultGeometry(DefaultLayers, DefaultPages, p.PageSize)
	for i := range g.Buffers {
		if g.Buffers[i].Name != BufferScales && p.HeadDim > 0 {
			g.Buffers[i].HeadDim = p.HeadDim
		}
	}
	return g
}

func check(ctx context.Context, s *kind.Session, p kind.Params) (*report.Run, error) {
	g := FlagGeometry(p)
	sc := SuiteConfig{Geometry: g}
	var ls []*layout.Layout
	for i, b := range g.Buffers {
		if b.Name == BufferScales {
			continue // a fixed 16 elements a token: not a head dim to draw
		}
		l, err := g.Layout(i)
		if err != nil {
			return nil, err
		}
		ls = append(ls, l)
	}
	sh, err := p.Spaces(ctx, s, ls)
	if err != nil {
		return nil, err
	}
	if sc.Shapes, err = sh.Profiles(ctx, s, p, ls, nil, Profiles); err != nil {
		return nil, err
	}
	reach := Reaches(p, s)
	sc.Far = reach == ""
	suite, err := Suite(s, p, sc)
	if err != nil {
		return nil, err
	}
	h := p.GeometryHeader(s, g)
	if sh.Drawn() {
		h.About = g.Outline()
		h.Coverage, h.Shapes = sh.Lines(), true
		h.JSON = append(h.JSON, report.Field{Key: "shapes", Value: sh.Covered()})
	}
	h.Far = sc.Far
	if line := FarLine(p, reach); line != "" {
		h.Coverage = append(h.Coverage, line)
	}
	return kind.RunSuite(ctx, suite, Schema, h)
}

func replay(ctx context.Context, s *kind.Session, r *report.Repro, l *layout.Layout, b arena.Backend) (*report.Failure, error) {
	c := r.Case.(*Case)
	sys := NewSystem(s.Plugin, s.Dir, Config{Variant: r.Variant, Geometry: c.Geometry, Seed: r.BackgroundSeed, Backend: b}, nil)
	defer sys.Close(ctx)
	h := s.ReplayHeader(r, b)
	return kind.Replay(ctx, sys, Schema, h, r, l, c, string(Name))
}
