package load

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/kvharness/kvharness/harness/kind"
	"github.com/kvharness/kvharness/harness/layout"
	"github.com/kvharness/kvharness/harness/plugin"
	"github.com/kvharness/kvharness/harness/property"
	"github.com/kvharness/kvharness/harness/protocol"
	"github.com/kvharness/kvharness/harness/report"
	"github.com/kvharness/kvharness/harness/workload"
)

// Kind is the load kernel kind: layer loads and stream ordering.
var Kind = kind.Kind{
	Name:   protocol.Load,
	Check:  check,
	Replay: replay,
	Decode: func(data json.RawMessage, slots int) (workload.Case, error) {
		return kind.DecodeCase(protocol.Load, data, slots, &Case{})
	},
	Fuzz:        "FuzzLoad",
	FuzzPackage: "./harness/kernels/load",
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
	profiles := sc.Profiles
	if len(profiles) == 0 {
		profiles = Profiles
	}
	suite := &property.Suite[*System, *Case, *Result]{Plugin: s.Plugin, Cases: p.Cases, Seed: p.Seed, MaxFaults: p.MaxFaults,
		StopAtFirst: p.StopAtFirst, Shard: p.Shard, Jobs: p.Jobs, Spawn: s.Spawn}
	cfg := Config{Variant: p.Variant, Seed: p.Seed, Backend: p.Backend, Geometry: g}
	for _, profile := range profiles {
		gen := &Gen{Geometry: g, Profile: profile}
		suite.Rows = append(suite.Rows, property.Row[*System, *Case, *Result]{Layout: l, Label: profile, Key: profile,
			Open: func(ctx context.Context, pl *plugin.Plugin) (*System, error) {
				sys := NewSystem(pl, s.Dir, cfg, gen)
				if _, err := sys.Target(ctx, g); err != nil {
					sys.Close(ctx)
					return nil, err
				}
				return sys, nil
			},
			System: func(sys *System) property.System[*Case, *Result] { return sys }})
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
	suite, err := Suite(s, p, SuiteConfig{})
	if err != nil {
		return nil, err
	}
	g := FlagGeometry(p)
	vs, runErr := suite.Run(ctx)
	h := p.Header(s)
	h.JSON, h.About = report.Object{{Key: "geometry", Value: g}}, g.String()
	return report.Build(Schema, h, vs, runErr)
}

func replay(ctx context.Context, s *kind.Session, r *report.Repro, l *layout.Layout) (*report.Failure, error) {
	c := r.Case.(*Case)
	sys := NewSystem(s.Plugin, s.Dir, Config{Variant: r.Variant, Geometry: c.Geometry, Seed: r.BackgroundSeed}, nil)
	defer sys.Close(ctx)
	h := report.Header{Plugin: s.Desc.GetName(), Version: s.Desc.GetVersion(), Variant: r.Variant, PluginArg: s.PluginArg,
		Seed: r.BackgroundSeed}
	label := r.Tag
	if label == "" {
		label = string(protocol.Load)
	}
	return kind.Replay(ctx, sys, Schema, h, r, l, c, label)
}
