package read

import (
	"context"

	"github.com/kvharness/kvharness/harness/arena"
	"github.com/kvharness/kvharness/harness/layout"
	"github.com/kvharness/kvharness/harness/oracle"
	"github.com/kvharness/kvharness/harness/plugin"
	"github.com/kvharness/kvharness/harness/pool"
	"github.com/kvharness/kvharness/harness/rundir"
	"github.com/kvharness/kvharness/harness/target"
)

// Config says what to attach for reads. The maxima size staging.
type Config struct {
	Variant     string
	Layout      *layout.Layout
	Slots       int
	MaxRequests int // default 8
	MaxTokens   int // all lists of a case together; default 256
	MaxK        int // default 64
	Seed        int64
	Backend     arena.Backend // where the pool lives: the run's (arena.Want.Choose)
	Options     Options
}

func (c *Config) defaults() {
	if c.MaxRequests <= 0 {
		c.MaxRequests = 8
	}
	if c.MaxTokens <= 0 {
		c.MaxTokens = 256
	}
	if c.MaxK <= 0 {
		c.MaxK = 64
	}
}

// Target is a plugin's read kernel attached to an arena of one pool
// and a staging region, both filled with the seeded background. Each case
// writes its keys into the pool, runs twice, and leaves pool and staging
// as it found them.
type Target struct {
	Config
	target.Base
	Declared oracle.Declared
	// GeometryViolation is set when the plugin's declared geometry
	// differs from the layout's.
	GeometryViolation *oracle.Violation
	staging           readStaging
}

// Open describes the plugin, checks that it reads the layout, plans
// and fills the arena and attaches the plugin.
func Open(ctx context.Context, p *plugin.Plugin, dir *rundir.Dir, cfg Config) (*Target, error) {
	if cfg.Backend == nil {
		return nil, arena.ErrNoBackend
	}
	cfg.defaults()
	t := &Target{Config: cfg, Base: target.Base{Plugin: p, Variant: cfg.Variant}}
	var err error
	t.Declared, t.GeometryViolation, err = target.Declared(ctx, p, Name, cfg.Variant, cfg.Layout)
	if err != nil {
		return nil, err
	}
	if err := t.PlanAndAttach(ctx, func() error { return t.plan(dir) }); err != nil {
		return nil, err
	}
	return t, nil
}

// plan lays out one pool and the staging windows, and fills both with the
// background, so that any byte a read changes shows in Changed.
func (t *Target) plan(dir *rundir.Dir) error {
	t.staging = planReadStaging(t.Config)
	g, err := pool.Plan([]pool.Spec{{Name: "read", Layout: t.Layout, Slots: t.Slots}}, t.staging.size)
	if err != nil {
		return err
	}
	t.staging.base = g.Staging.Off
	return t.Plan(dir, t.Backend, g, func(mem arena.Memory) error {
		for _, w := range []pool.Window{g.Regions[0].Span(), g.Staging} {
			if err := mem.Fill(w, uint64(t.Seed)); err != nil {
				return err
			}
		}
		return nil
	})
}

// Region is the pool the oracle judges.
func (t *Target) Region() pool.Region { return t.Pools.Regions[0] }
