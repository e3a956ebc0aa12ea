package property

import (
	"context"
	"math/rand"

	"github.com/kvharness/kvharness/harness/check"
	"github.com/kvharness/kvharness/harness/workload"
)

// Stores is the store kernel of a target under one padding convention.
type Stores struct {
	Target *check.Target
	Gen    *workload.Gen
}

var _ System = (*Stores)(nil)

// NewStores draws store cases for t under padding p.
func NewStores(t *check.Target, p workload.Padding, maxCapacity int) *Stores {
	return &Stores{Target: t, Gen: &workload.Gen{Slots: t.Slots, PageSize: t.Layout.PageSize, Padding: p, MaxCapacity: maxCapacity}}
}

// Draw implements System.
func (s *Stores) Draw(rng *rand.Rand) workload.Case { return s.Gen.Draw(rng) }

// Shrink implements System.
func (s *Stores) Shrink(c workload.Case) []workload.Case {
	var out []workload.Case
	for _, x := range workload.Shrink(c.(*workload.Store)) {
		out = append(out, x)
	}
	return out
}

// Check implements System.
func (s *Stores) Check(ctx context.Context, c workload.Case) (*check.Result, error) {
	return s.Target.Check(ctx, c.(*workload.Store))
}

// Restart implements System.
func (s *Stores) Restart(ctx context.Context) error { return s.Target.Plugin.Restart(ctx) }
