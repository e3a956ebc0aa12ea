package sequence

import (
	"context"

	"github.com/kvharness/kvharness/harness/kind"
	"github.com/kvharness/kvharness/harness/plugin"
	"github.com/kvharness/kvharness/harness/property"
	"github.com/kvharness/kvharness/harness/rundir"
	"github.com/kvharness/kvharness/harness/target"
)

// System is a plugin's store kernel as a sequence run drives it. A case
// carries its geometry (shrinking drops layers, capacities and pages; a
// repro file replays the arena it failed on), so targets are opened per
// geometry and the last few kept.
type System struct {
	kind.Cases[*Case, *Gen] // Gen: nil on a replay system, which only checks

	Plugin *plugin.Plugin
	Dir    *rundir.Dir
	Config Config // its Geometry is the first target's; each case brings its own

	targets target.Cache[*Target]
}

var _ property.System[*Case, *Result] = (*System)(nil)

// maxTargets bounds the arenas kept open while shrinking.
const maxTargets = 4

// NewSystem draws cases of gen (nil: a replay system that only checks).
func NewSystem(p *plugin.Plugin, dir *rundir.Dir, cfg Config, gen *Gen) *System {
	return &System{Plugin: p, Dir: dir, Config: cfg, Cases: kind.Cases[*Case, *Gen]{Gen: gen, Shrinker: Shrink},
		targets: target.Cache[*Target]{Max: maxTargets}}
}

// Check implements property.System.
func (s *System) Check(ctx context.Context, c *Case) (*Result, error) {
	return kind.CheckOn(ctx, s.Target, (*Target).Check, c.Geometry, c)
}

// Crashed implements property.Crasher: a plugin that dies or fails a call
// mid-sequence is the sequence's finding.
func (s *System) Crashed(f *plugin.Fault) *Result {
	r := &Result{Fault: f.Error()}
	r.Add(Violation{Kind: Crash, Step: -1, LastWrite: -1, Detail: f.Error()})
	return r
}

// Restart implements property.System; targets attach again on their next
// call.
func (s *System) Restart(ctx context.Context) error { return s.Plugin.Restart(ctx) }

// Target is the target of geometry g.
func (s *System) Target(ctx context.Context, g Geometry) (*Target, error) {
	return s.targets.Get(ctx, g.Key(), func() (*Target, error) {
		cfg := s.Config
		cfg.Geometry = g
		return Open(ctx, s.Plugin, s.Dir, cfg)
	})
}

// Close frees every target's arena.
func (s *System) Close(ctx context.Context) { s.targets.Close(ctx) }
