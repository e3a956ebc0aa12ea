package read

import (
	"context"

	"github.com/kvharness/kvharness/harness/arena"
	"github.com/kvharness/kvharness/harness/fuzzing"
	"github.com/kvharness/kvharness/harness/kind"
	"github.com/kvharness/kvharness/harness/layout"
	"github.com/kvharness/kvharness/harness/plugin"
	"github.com/kvharness/kvharness/harness/property"
	"github.com/kvharness/kvharness/harness/report"
)

// Kind is the read kernel kind: queries scored against the keys of token
// lists, answered with each request's top k.
var Kind = kind.Kind{
	Name:    Name,
	Layouts: true,
	Check:   check,
	Replay:  replay,
	Decode:  kind.Decoder(Name, func() *Case { return &Case{} }),
	Fuzz:    fuzzing.Lane(FuzzTarget),
	Bench:   &Bench,
}

// Suite is the read properties over layouts: a row and a target per
// layout. cfg gives the staging maxima and the oracle's tolerances; its
// layout, slots, seed, variant and backend come from p.
func Suite(s *kind.Session, p kind.Params, cfg Config) *property.Suite[*Target, *Case, *Result] {
	suite := kind.NewSuite[*Target, *Case, *Result](s, p)
	suite.Stress = p.Stress
	for _, l := range p.Layouts {
		c := cfg
		c.Variant, c.Layout, c.Slots, c.Seed, c.Backend = p.Variant, l, p.Slots, p.Seed, p.Backend
		suite.Rows = append(suite.Rows, property.Row[*Target, *Case, *Result]{Layout: l, Label: Label, Key: l.Name,
			Open:   func(ctx context.Context, pl *plugin.Plugin) (*Target, error) { return Open(ctx, pl, s.Dir, c) },
			System: func(t *Target) property.System[*Case, *Result] { return NewSystem(t) }})
	}
	return suite
}

func check(ctx context.Context, s *kind.Session, p kind.Params) (*report.Run, error) {
	h := p.Header(s)
	h.JSON = report.Object{{Key: "slots", Value: p.Slots}}
	return kind.RunSuite(ctx, Suite(s, p, Config{}), Schema, h)
}

func replay(ctx context.Context, s *kind.Session, r *report.Repro, l *layout.Layout, b arena.Backend) (*report.Failure, error) {
	c := r.Case.(*Case)
	t, err := Open(ctx, s.Plugin, s.Dir, Config{Variant: r.Variant, Layout: l, Slots: r.Slots,
		MaxRequests: len(c.Requests), MaxTokens: max(1, c.TotalTokens()), MaxK: c.K, Seed: r.BackgroundSeed, Backend: b})
	if err != nil {
		return nil, err
	}
	defer t.Close(ctx)
	h := s.ReplayHeader(r, b)
	h.Slots = r.Slots
	return kind.Replay(ctx, &System{Target: t, Cases: kind.Cases[*Case, *Gen]{Shrinker: Shrink}}, Schema, h, r, l, c, Label)
}
