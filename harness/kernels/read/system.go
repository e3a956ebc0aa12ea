package read

import (
	"context"
	"slices"

	"github.com/kvharness/kvharness/harness/kind"
	"github.com/kvharness/kvharness/harness/layout"
	"github.com/kvharness/kvharness/harness/property"
)

// System is the read kernel of a target, as a property run drives it.
type System struct {
	kind.Cases[*Case, *Gen] // Gen: nil on a replay system, which only checks

	Target *Target
}

var _ property.System[*Case, *Result] = (*System)(nil)

// NewSystem draws read cases sized for t's staging.
func NewSystem(t *Target) *System {
	gen := &Gen{Slots: t.Slots, PageSize: t.Layout.PageSize, MaxRequests: t.MaxRequests, MaxTokens: t.MaxTokens, MaxK: t.MaxK,
		Live: t.live, NonFinite: t.NonFinite != layout.NonFiniteUndeclared}
	return &System{Target: t, Cases: kind.Cases[*Case, *Gen]{Gen: gen, Shrinker: t.shrink}}
}

// shrink is Shrink, kept to a far pool's live windows: elsewhere a sparse
// GPU arena has no memory, and a host one would materialize pages no drawn
// case names.
func (t *Target) shrink(c *Case) []*Case {
	out := Shrink(c)
	if t.live == nil {
		return out
	}
	return slices.DeleteFunc(out, func(x *Case) bool {
		return slices.ContainsFunc(x.Keys, func(k Key) bool { return !t.live.Contains(k.Slot) })
	})
}

// Check implements property.System.
func (s *System) Check(ctx context.Context, c *Case) (*Result, error) { return s.Target.Check(ctx, c) }

// Restart implements property.System.
func (s *System) Restart(ctx context.Context) error { return s.Target.Plugin.Restart(ctx) }

// KeepSpare implements property.Sparer.
func (s *System) KeepSpare(ctx context.Context) { s.Target.Plugin.KeepSpare(ctx) }
