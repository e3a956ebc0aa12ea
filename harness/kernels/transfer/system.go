package transfer

import (
	"context"
	"math/rand"
	"slices"

	"github.com/kvharness/kvharness/harness/plugin"
	"github.com/kvharness/kvharness/harness/property"
	"github.com/kvharness/kvharness/harness/rundir"
)

// System is a plugin's transfer kernel as a property run drives it. It
// draws cases over one geometry but checks each case over the case's own
// geometry: shrinking drops layers and buffers and cuts the pools, and a
// repro file carries the arena it failed on. Targets are therefore opened
// per geometry, and the last few kept.
type System struct {
	Plugin *plugin.Plugin
	Dir    *rundir.Dir
	Config Config // its Geometry is ignored: each case brings its own
	Gen    *Gen

	targets map[string]*Target
	recent  []string // geometry keys, least recently used first
}

var _ property.System[*Case, *Result] = (*System)(nil)

// maxTargets bounds the arenas kept open while shrinking.
const maxTargets = 4

// NewSystem draws cases of one profile over cfg.Geometry. A replay
// system (no generator) passes a nil gen: it can check, not draw.
func NewSystem(p *plugin.Plugin, dir *rundir.Dir, cfg Config, gen *Gen) *System {
	return &System{Plugin: p, Dir: dir, Config: cfg, Gen: gen, targets: map[string]*Target{}}
}

// Draw implements property.System.
func (s *System) Draw(rng *rand.Rand) *Case { return s.Gen.Draw(rng) }

// Shrink implements property.System.
func (s *System) Shrink(c *Case) []*Case { return Shrink(c) }

// Check implements property.System.
func (s *System) Check(ctx context.Context, c *Case) (*Result, error) {
	t, err := s.Target(ctx, c.Geometry)
	if err != nil {
		return nil, err
	}
	return t.Check(ctx, c)
}

// Restart implements property.System. Targets attach again on their next call.
func (s *System) Restart(ctx context.Context) error { return s.Plugin.Restart(ctx) }

// Target returns the target for a geometry, opening it (and closing the
// least recently used one beyond maxTargets) when needed.
func (s *System) Target(ctx context.Context, g Geometry) (*Target, error) {
	key := g.Key()
	if t, ok := s.targets[key]; ok {
		s.touch(key)
		return t, nil
	}
	cfg := s.Config
	cfg.Geometry = g
	t, err := Open(ctx, s.Plugin, s.Dir, cfg)
	if err != nil {
		return nil, err
	}
	s.targets[key] = t
	s.touch(key)
	if len(s.recent) > maxTargets {
		old := s.recent[0]
		s.targets[old].Close(ctx)
		delete(s.targets, old)
		s.recent = s.recent[1:]
	}
	return t, nil
}

func (s *System) touch(key string) {
	s.recent = append(slices.DeleteFunc(s.recent, func(k string) bool { return k == key }), key)
}

// Close frees every target's arena; Details keeps working.
func (s *System) Close(ctx context.Context) {
	for _, key := range s.recent {
		s.targets[key].Close(ctx)
	}
	clear(s.targets)
	s.recent = nil
}
