package transfer

import (
	"context"
	"math/rand"
	"slices"

	"github.com/kvharness/kvharness/harness/check"
	"github.com/kvharness/kvharness/harness/plugin"
	"github.com/kvharness/kvharness/harness/rundir"
	"github.com/kvharness/kvharness/harness/workload"
)

// Transfers is a plugin's transfer kernel as a property run drives it. It
// draws cases over one geometry but checks each case over the case's own
// geometry: shrinking drops layers and buffers and cuts the pools, and a
// repro file carries the arena it failed on. Targets are therefore opened
// per geometry, and the last few kept.
type Transfers struct {
	Plugin *plugin.Plugin
	Dir    *rundir.Dir
	Config check.TransferConfig // its Geometry is ignored: each case brings its own
	Gen    *workload.TransferGen

	targets map[string]*check.TransferTarget
	recent  []string // geometry keys, least recently used first
	results map[*check.Result]*check.TransferResult
	last    *check.TransferResult
}

var _ System = (*Transfers)(nil)

// maxTargets bounds the arenas kept open while shrinking.
const maxTargets = 4

// NewTransfers draws cases of one profile over cfg.Geometry. A replay
// system (no generator) passes a nil gen: it can check, not draw.
func NewTransfers(p *plugin.Plugin, dir *rundir.Dir, cfg check.TransferConfig, gen *workload.TransferGen) *Transfers {
	return &Transfers{Plugin: p, Dir: dir, Config: cfg, Gen: gen,
		targets: map[string]*check.TransferTarget{}, results: map[*check.Result]*check.TransferResult{}}
}

// Draw implements System.
func (s *Transfers) Draw(rng *rand.Rand) workload.Case { return s.Gen.Draw(rng) }

// Shrink implements System.
func (s *Transfers) Shrink(c workload.Case) []workload.Case {
	var out []workload.Case
	for _, x := range workload.ShrinkTransfer(c.(*workload.Transfer)) {
		out = append(out, x)
	}
	return out
}

// Check implements System.
func (s *Transfers) Check(ctx context.Context, c workload.Case) (*check.Result, error) {
	tc := c.(*workload.Transfer)
	t, err := s.Target(ctx, tc.Geometry)
	if err != nil {
		return nil, err
	}
	res, err := t.Check(ctx, tc)
	if err != nil {
		return nil, err
	}
	s.last = res
	if res.Failed() {
		s.results[&res.Result] = res
	}
	return &res.Result, nil
}

// Details returns the transfer result behind a result this system's Check
// returned: its located violations, descriptors and room digests. It keeps
// those of every failing result and of the last one.
func (s *Transfers) Details(r *check.Result) (*check.TransferResult, bool) {
	if s.last != nil && &s.last.Result == r {
		return s.last, true
	}
	res, ok := s.results[r]
	return res, ok
}

// Restart implements System. Targets attach again on their next call.
func (s *Transfers) Restart(ctx context.Context) error { return s.Plugin.Restart(ctx) }

// Target returns the target for a geometry, opening it (and closing the
// least recently used one beyond maxTargets) when needed.
func (s *Transfers) Target(ctx context.Context, g workload.TransferGeometry) (*check.TransferTarget, error) {
	key := g.Key()
	if t, ok := s.targets[key]; ok {
		s.touch(key)
		return t, nil
	}
	cfg := s.Config
	cfg.Geometry = g
	t, err := check.OpenTransfer(ctx, s.Plugin, s.Dir, cfg)
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

func (s *Transfers) touch(key string) {
	s.recent = append(slices.DeleteFunc(s.recent, func(k string) bool { return k == key }), key)
}

// Close frees every target's arena; Details keeps working.
func (s *Transfers) Close(ctx context.Context) {
	for _, key := range s.recent {
		s.targets[key].Close(ctx)
	}
	clear(s.targets)
	s.recent = nil
}
