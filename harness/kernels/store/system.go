package store

import (
	"context"
	"math/rand"

	"github.com/kvharness/kvharness/harness/plugin"
	"github.com/kvharness/kvharness/harness/property"
)

// System is the store kernel of a target under one padding convention, as
// a property run drives it.
type System struct {
	Target *Target
	Gen    *Gen
}

var (
	_ property.System[*Case, *Result] = (*System)(nil)
	_ property.Crasher[*Result]       = (*System)(nil)
)

// NewSystem draws store cases for t under padding p.
func NewSystem(t *Target, p Padding, maxCapacity int) *System {
	return &System{Target: t, Gen: &Gen{Slots: t.Slots, PageSize: t.Layout.PageSize, Padding: p, MaxCapacity: maxCapacity}}
}

// Draw implements property.System.
func (s *System) Draw(rng *rand.Rand) *Case { return s.Gen.Draw(rng) }

// Shrink implements property.System.
func (s *System) Shrink(c *Case) []*Case { return Shrink(c) }

// Check implements property.System.
func (s *System) Check(ctx context.Context, c *Case) (*Result, error) { return s.Target.Check(ctx, c) }

// Restart implements property.System.
func (s *System) Restart(ctx context.Context) error { return s.Target.Plugin.Restart(ctx) }

// Crashed implements property.Crasher: a store that kills its process
// is a kernel bug, reported with its case and with what a sanitizer saw
// the process do before it died.
func (s *System) Crashed(f *plugin.Fault) *Result {
	r := crashed(f)
	r.Judged = &Judgement{Layout: s.Target.Layout, Mode: s.Target.Value} // the repro file records it as for any case
	r.addFindings(s.Target.Plugin.ExitedFindings())
	return r
}
