package read

import (
	"context"
	"math/rand"

	"github.com/kvharness/kvharness/harness/property"
)

// System is the read kernel of a target, as a property run drives it.
type System struct {
	Target *Target
	Gen    *Gen
}

var _ property.System[*Case, *Result] = (*System)(nil)

// NewSystem draws read cases sized for t's staging.
func NewSystem(t *Target) *System {
	return &System{Target: t, Gen: &Gen{Slots: t.Slots, PageSize: t.Layout.PageSize,
		MaxRequests: t.MaxRequests, MaxTokens: t.MaxTokens, MaxK: t.MaxK}}
}

// Draw implements property.System.
func (s *System) Draw(rng *rand.Rand) *Case { return s.Gen.Draw(rng) }

// Shrink implements property.System.
func (s *System) Shrink(c *Case) []*Case { return Shrink(c) }

// Check implements property.System.
func (s *System) Check(ctx context.Context, c *Case) (*Result, error) { return s.Target.Check(ctx, c) }

// Restart implements property.System.
func (s *System) Restart(ctx context.Context) error { return s.Target.Plugin.Restart(ctx) }
