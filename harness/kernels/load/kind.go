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
			sys := NewSystem(pl, s.Dir, cfg, &Gen{Geometry: g, Profile: profile})
			return kind.Warmed(ctx, sys, g)
		})
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
	suite, err := Suite(s, p, SuiteConfig{})
	if err != nil {
		return nil, err
	}
	return kind.RunSuite(ctx, suite, Schema, p.GeometryHeader(s, FlagGeometry(p)))
}

func replay(ctx context.Context, s *kind.Session, r *report.Repro, l *layout.Layout, b arena.Backend) (*report.Failure, error) {
	c := r.Case.(*Case)
	sys := NewSystem(s.Plugin, s.Dir, Config{Variant: r.Variant, Geometry: c.Geometry, Seed: r.BackgroundSeed, Backend: b}, nil)
	defer sys.Close(ctx)
	h := s.ReplayHeader(r, b)
	label := r.Tag
	if label == "" {
		label = string(Name)
	}
	return kind.Replay(ctx, sys, Schema, h, r, l, c, label)
}
