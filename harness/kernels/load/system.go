package load

import (
	"context"

	"github.com/kvharness/kvharness/harness/kind"
	"github.com/kvharness/kvharness/harness/plugin"
	"github.com/kvharness/kvharness/harness/property"
	"github.com/kvharness/kvharness/harness/rundir"
)

// System is a plugin's load kernel as a property run drives it: cases of
// one profile over one geometry. A case carries its geometry (a repro
// file replays it on the arena it failed on), so the target is opened for
// the case's, and kept while it stays the same.
type System struct {
	kind.Cases[*Case, *Gen] // Gen: nil on a replay system, which only checks

	Plugin *plugin.Plugin
	Dir    *rundir.Dir
	Config Config // its Geometry is the first target's; each case brings its own

	target *Target
}

var _ property.System[*Case, *Result] = (*System)(nil)

// NewSystem draws cases of gen's profile (nil: a replay system that only
// checks).
func NewSystem(p *plugin.Plugin, dir *rundir.Dir, cfg Config, gen *Gen) *System {
	return &System{Plugin: p, Dir: dir, Config: cfg, Cases: kind.Cases[*Case, *Gen]{Gen: gen, Shrinker: Shrink}}
}

// Check implements property.System.
func (s *System) Check(ctx context.Context, c *Case) (*Result, error) {
	return kind.CheckOn(ctx, s.Target, (*Target).Check, c.Geometry, c)
}

// Restart implements property.System; the target attaches again on its
// next call.
func (s *System) Restart(ctx context.Context) error { return s.Plugin.Restart(ctx) }

// Target is the target of a geometry, opened (and the last one closed)
// when it changes.
func (s *System) Target(ctx context.Context, g Geometry) (*Target, error) {
	if s.target != nil && s.target.Geometry.Key() == g.Key() {
		return s.target, nil
	}
	s.Close(ctx)
	cfg := s.Config
	cfg.Geometry = g
	t, err := Open(ctx, s.Plugin, s.Dir, cfg)
	if err != nil {
		return nil, err
	}
	s.target = t
	return t, nil
}

// Close frees the target's arena.
func (s *System) Close(ctx context.Context) {
	if s.target != nil {
		s.target.Close(ctx)
		s.target = nil
	}
}

// KeepSpare implements property.Sparer.
func (s *System) KeepSpare(ctx context.Context) { s.Plugin.KeepSpare(ctx) }
