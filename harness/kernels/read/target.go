package read

import (
	"context"
	"fmt"

	"github.com/kvharness/kvharness/harness/arena"
	"github.com/kvharness/kvharness/harness/layout"
	"github.com/kvharness/kvharness/harness/oracle"
	"github.com/kvharness/kvharness/harness/plugin"
	"github.com/kvharness/kvharness/harness/pool"
	"github.com/kvharness/kvharness/harness/rundir"
	"github.com/kvharness/kvharness/harness/target"
	"github.com/kvharness/kvharness/harness/workload"
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
	// NonFinite is the plugin's declared read policy for ±Inf and NaN in
	// queries and keys (Policy): layout.Contained, or "" for none.
	NonFinite layout.NonFinite
	// GeometryViolation is set when the plugin's declared geometry
	// differs from the layout's.
	GeometryViolation *oracle.Violation
	staging           readStaging
	// live are the slots cases name when the pool is checked in windows
	// (pool.LiveRanges: a pool past 4 GiB of offsets); nil: every slot.
	live workload.Ranges
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
	if t.Layout, err = ReaderLayout(cfg.Layout, t.Declared, p.Name); err != nil {
		return nil, err
	}
	d, err := p.Describe(ctx, target.QueryFor(cfg.Variant, cfg.Layout)) // asked above: the answer is cached
	if err != nil {
		return nil, err
	}
	if t.NonFinite, err = Policy(p.Name, d); err != nil {
		return nil, err
	}
	if err := t.PlanAndAttach(ctx, func() error { return t.plan(dir) }); err != nil {
		return nil, err
	}
	return t, nil
}

// plan lays out one pool and the staging windows, and fills both with the
// background, so that any byte a read changes shows in Changed. A pool
// checked in windows (far) is filled lazily but for its live windows: its
// other pages stay holes (host) or unbacked (a GPU's sparse arena).
func (t *Target) plan(dir *rundir.Dir) error {
	t.staging = planReadStaging(t.Config)
	g, err := pool.Plan([]pool.Spec{{Name: "read", Layout: t.Layout, Slots: t.Slots}}, t.staging.size)
	if err != nil {
		return err
	}
	t.staging.base = g.Staging.Off
	r := g.Regions[0]
	t.live = pool.LiveRanges(t.Layout, t.Slots)
	if t.live != nil {
		live := pool.LiveWindows(t.Layout, r, t.live)
		t.Backed = append(live, g.Staging)
		t.Resident = g.Staging.Len + pool.LiveBytes(t.Layout, t.Slots) + liveRoom
	}
	return t.Plan(dir, t.Backend, g, func(mem arena.Memory) error {
		if lazy, ok := mem.(arena.Lazy); ok && lazy.Sparse() && t.live != nil {
			if err := lazy.Reserve(g.Staging); err != nil {
				return err
			}
			if err := lazy.FillLazy(r.Span(), uint64(t.Seed)); err != nil {
				return err
			}
			if err := lazy.Materialize(pool.LiveWindows(t.Layout, r, t.live)); err != nil {
				return err
			}
			return mem.Fill(g.Staging, uint64(t.Seed))
		}
		for _, w := range []pool.Window{r.Span(), g.Staging} {
			if err := mem.Fill(w, uint64(t.Seed)); err != nil {
				return err
			}
		}
		return nil
	})
}

// liveRoom is what a far pool's arena may hold beyond its live windows,
// for the room check: pages a replayed case's keys name elsewhere.
const liveRoom = 16 << 20

// Region is the pool the oracle judges.
func (t *Target) Region() pool.Region { return t.Pools.Regions[0] }

// ReaderLayout is l as a read kernel declared it reads it: with the fp8
// recipe it declared, so that the keys the harness writes have the scales
// its code believes in (a reader that takes power-of-two scales declares
// the ue8m0 rule and is given power-of-two scales). A recipe for a layout
// without fp8 fields, or one that does not fit it, is an error naming the
// plugin.
func ReaderLayout(l *layout.Layout, d oracle.Declared, plugin string) (*layout.Layout, error) {
	if d.Recipe == nil {
		return l, nil
	}
	if !l.Quantized() {
		return nil, fmt.Errorf("plugin %s declares a recipe (%s) for layout %s, which has no fp8 fields: declare none there", plugin, d.Recipe, l.Name)
	}
	out, err := l.WithRecipe(d.Recipe)
	if err != nil {
		return nil, fmt.Errorf("plugin %s declares a recipe for layout %s that does not fit it: %w", plugin, l.Name, err)
	}
	return out, nil
}
