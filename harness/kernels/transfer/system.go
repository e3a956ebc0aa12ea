package transfer

import (
	"context"

	"github.com/kvharness/kvharness/harness/kind"
	"github.com/kvharness/kvharness/harness/pd"
	"github.com/kvharness/kvharness/harness/plugin"
	"github.com/kvharness/kvharness/harness/property"
	"github.com/kvharness/kvharness/harness/rundir"
	"github.com/kvharness/kvharness/harness/target"
)

// System is a plugin's transfer kernel as a property run drives it. It
// draws cases over one geometry but checks each case over the case's own
// geometry: shrinking drops layers and buffers and cuts the pools, and a
// repro file carries the arena it failed on. Targets are therefore opened
// per geometry, and the last few kept.
type System struct {
	kind.Cases[*Case, *Gen] // Gen: nil on a replay system, which only checks

	Plugin *plugin.Plugin
	Dir    *rundir.Dir
	Config Config // its Geometry is ignored: each case brings its own

	targets target.Cache[*Target] // by geometry key
	// shrunkTo are the geometries the shrink opened targets for
	// (pd.Incremental), once shrinking began.
	shrunkTo  map[string]bool
	shrinking bool
}

var _ property.System[*Case, *Result] = (*System)(nil)

// maxTargets bounds the arenas kept open while shrinking.
const maxTargets = 4

// NewSystem draws cases of one profile over cfg.Geometry. A replay
// system (no generator) passes a nil gen: it can check, not draw.
func NewSystem(p *plugin.Plugin, dir *rundir.Dir, cfg Config, gen *Gen) *System {
	s := &System{Plugin: p, Dir: dir, Config: cfg,
		Cases: kind.Cases[*Case, *Gen]{Gen: gen}, targets: target.Cache[*Target]{Max: maxTargets}, shrunkTo: map[string]bool{}}
	s.Shrinker = s.shrink
	return s
}

// shrink is Shrink, incrementally: steps over the case's geometry first,
// and over at most pd.MaxShrinkGeometries others in the whole shrink.
func (s *System) shrink(c *Case) []*Case {
	s.shrinking = true
	return pd.Incremental(Shrink(c), c.Geometry, func(x *Case) pd.Geometry { return x.Geometry }, s.shrunkTo)
}

// Check implements property.System.
func (s *System) Check(ctx context.Context, c *Case) (*Result, error) {
	return kind.CheckOn(ctx, s.Target, (*Target).Check, c.Geometry, c)
}

// Restart implements property.System. Targets attach again on their next call.
func (s *System) Restart(ctx context.Context) error { return s.Plugin.Restart(ctx) }

// Target returns the target for a geometry, opening it (and closing the
// least recently used one beyond maxTargets) when needed.
func (s *System) Target(ctx context.Context, g pd.Geometry) (*Target, error) {
	return s.targets.Get(ctx, g.Key(), func() (*Target, error) {
		cfg := s.Config
		cfg.Geometry = g
		if s.shrinking {
			s.shrunkTo[g.Key()] = true
		}
		return Open(ctx, s.Plugin, s.Dir, cfg)
	})
}

// Close frees every target's arena; Details keeps working.
func (s *System) Close(ctx context.Context) {
	s.targets.Close(ctx)
}

// KeepSpare implements property.Sparer.
func (s *System) KeepSpare(ctx context.Context) { s.Plugin.KeepSpare(ctx) }
