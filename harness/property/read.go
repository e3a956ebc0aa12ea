package property

import (
	"context"
	"math/rand"

	"github.com/kvharness/kvharness/harness/check"
	"github.com/kvharness/kvharness/harness/workload"
)

// Reads is the read kernel of a target, as a property run drives it.
type Reads struct {
	Target *check.ReadTarget
	Gen    *workload.ReadGen
}

var _ System = (*Reads)(nil)

// NewReads draws read cases sized for t's staging.
func NewReads(t *check.ReadTarget) *Reads {
	return &Reads{Target: t, Gen: &workload.ReadGen{Slots: t.Slots, PageSize: t.Layout.PageSize,
		MaxRequests: t.MaxRequests, MaxTokens: t.MaxTokens, MaxK: t.MaxK}}
}

// Draw implements System.
func (s *Reads) Draw(rng *rand.Rand) workload.Case { return s.Gen.Draw(rng) }

// Shrink implements System.
func (s *Reads) Shrink(c workload.Case) []workload.Case {
	var out []workload.Case
	for _, x := range workload.ShrinkRead(c.(*workload.Read)) {
		out = append(out, x)
	}
	return out
}

// Check implements System.
func (s *Reads) Check(ctx context.Context, c workload.Case) (*check.Result, error) {
	return s.Target.Check(ctx, c.(*workload.Read))
}

// Restart implements System.
func (s *Reads) Restart(ctx context.Context) error { return s.Target.Plugin.Restart(ctx) }
