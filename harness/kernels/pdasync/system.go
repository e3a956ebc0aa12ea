package pdasync

import (
	"context"
	"errors"

	"github.com/kvharness/kvharness/harness/kind"
	"github.com/kvharness/kvharness/harness/pd"
	"github.com/kvharness/kvharness/harness/plugin"
	"github.com/kvharness/kvharness/harness/property"
	"github.com/kvharness/kvharness/harness/rundir"
	"github.com/kvharness/kvharness/harness/target"
)

// System is a plugin's pdasync kernel as a property run drives it: two
// processes of the plugin, one per role. It draws cases over one geometry
// but checks each over the case's own (shrinking drops buffers and cuts
// the pools; a repro file carries the arena it failed on), so targets are
// opened per geometry and the last few kept.
type System struct {
	kind.Cases[*Case, *Gen] // Gen: nil on a replay system, which only checks

	Prefill, Decode *plugin.Plugin
	Dir             *rundir.Dir
	Config          Config // its Geometry is ignored: each case brings its own
	// OwnsDecode says Close closes the decode process: it was spawned for
	// the system.
	OwnsDecode bool

	targets target.Cache[*Target] // by geometry key
	// shrunkTo are the geometries the shrink opened targets for
	// (pd.Incremental), once shrinking began.
	shrunkTo  map[string]bool
	shrinking bool
	owner     *Target // the target the two processes are attached to
}

var _ property.System[*Case, *Result] = (*System)(nil)

// maxTargets bounds the arena pairs kept open while shrinking.
const maxTargets = 4

// NewSystem draws cases of gen (nil for a replay: it checks, not draws)
// on a prefill and a decode process.
func NewSystem(prefill, decode *plugin.Plugin, dir *rundir.Dir, cfg Config, gen *Gen) *System {
	s := &System{Prefill: prefill, Decode: decode, Dir: dir, Config: cfg,
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

// Spawned is NewSystem with a decode process spawned from prefill's, closed
// with the system.
func Spawned(ctx context.Context, prefill *plugin.Plugin, dir *rundir.Dir, cfg Config, gen *Gen) (*System, error) {
	decode, err := prefill.Spawn(ctx)
	if err != nil {
		return nil, err
	}
	s := NewSystem(prefill, decode, dir, cfg, gen)
	s.OwnsDecode = true
	return s, nil
}

// Check implements property.System.
func (s *System) Check(ctx context.Context, c *Case) (*Result, error) {
	return kind.CheckOn(ctx, s.Target, (*Target).Check, c.Geometry, c)
}

// Restart implements property.System: both processes start again (a fault
// in either leaves the pair's state unknown), and targets attach again on
// their next call.
func (s *System) Restart(ctx context.Context) error {
	s.targets.Each((*Target).Detached)
	return errors.Join(s.Prefill.Restart(ctx), s.Decode.Restart(ctx))
}

// Target returns the target for a geometry, opening it (and closing the
// least recently used one beyond maxTargets) when needed.
func (s *System) Target(ctx context.Context, g pd.Geometry) (*Target, error) {
	return s.targets.Get(ctx, g.Key(), func() (*Target, error) {
		cfg := s.Config
		cfg.Geometry = g
		if s.shrinking {
			s.shrunkTo[g.Key()] = true
		}
		return open(ctx, s.Prefill, s.Decode, s.Dir, cfg, &s.owner)
	})
}

// Close frees every target's arenas, and the decode process if the system
// spawned it.
func (s *System) Close(ctx context.Context) {
	s.targets.Close(ctx)
	if s.OwnsDecode {
		s.Decode.Close()
	}
}

// KeepSpare implements property.Sparer: a spare for each of the pair.
func (s *System) KeepSpare(ctx context.Context) {
	s.Prefill.KeepSpare(ctx)
	s.Decode.KeepSpare(ctx)
}
