package store

import (
	"context"
	"fmt"

	"github.com/kvharness/kvharness/harness/fuzzing"
	"github.com/kvharness/kvharness/harness/kind"
	"github.com/kvharness/kvharness/harness/layout"
	"github.com/kvharness/kvharness/harness/plugin"
	"github.com/kvharness/kvharness/harness/property"
	"github.com/kvharness/kvharness/harness/report"
)

// Kind is the store kernel kind: a batch of rows written into a pool's
// slots, padded as a CUDA-graph replay pads it.
var Kind = kind.Kind{
	Name:    Name,
	Layouts: true,
	Graphs:  true,
	Check:   check,
	Replay:  replay,
	Decode:  kind.Decoder(Name, func() *Case { return &Case{} }),
	Fuzz:    fuzzing.Lane(FuzzTarget),
}

// Suite is the store properties over layouts × paddings: one target per
// layout, shared by its paddings' rows.
func Suite(s *kind.Session, p kind.Params, paddings []Padding) *property.Suite[*Target, *Case, *Result] {
	suite := kind.NewSuite[*Target, *Case, *Result](s, p)
	suite.Stress = p.Stress
	sets := AutoSets
	if p.Stress > 1 {
		sets = 0 // a stressed case runs on its processes at once, not ahead (property.Suite.Stress)
	}
	for _, l := range p.Layouts {
		slots := p.Slots
		if p.DefaultSlots {
			slots = defaultSlotsFor(l, slots)
		}
		cfg := Config{Variant: p.Variant, Layout: l, Slots: slots, MaxCapacity: p.MaxCapacity, Seed: p.Seed,
			Backend: p.Backend, Graph: p.Graph, Value: p.Value, Sets: sets}
		for _, pad := range paddings {
			suite.Rows = append(suite.Rows, property.Row[*Target, *Case, *Result]{Layout: l, Label: pad.String(), Key: l.Name,
				Open: func(ctx context.Context, pl *plugin.Plugin) (*Target, error) { return Open(ctx, pl, s.Dir, cfg) },
				System: func(t *Target) property.System[*Case, *Result] {
					sys := NewSystem(t, pad, p.MaxCapacity)
					sys.Budget = p.Cases
					return sys
				}})
		}
	}
	return suite
}

func check(ctx context.Context, s *kind.Session, p kind.Params) (*report.Run, error) {
	paddings := Paddings
	if p.Padding != "" && p.Padding != "all" {
		pad, err := ParsePadding(p.Padding)
		if err != nil {
			return nil, err
		}
		paddings = []Padding{pad}
	}
	h := p.Header(s)
	h.JSON = report.Object{{Key: "slots", Value: p.Slots}}
	if p.Value == layout.Exact { // the default, by the declared recipe, goes unsaid
		h.About = "fp8 values judged bit-exact"
		h.JSON = append(h.JSON, report.Field{Key: "value", Value: p.Value.String()})
	}
	return kind.RunSuite(ctx, Suite(s, p, paddings), Schema, h)
}

func replay(ctx context.Context, s *kind.Session, r *report.Repro, l *layout.Layout) (*report.Failure, error) {
	c := r.Case.(*Case)
	mode, err := layout.ParseMode(r.Value)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", report.ErrBadRepro, err)
	}
	t, err := Open(ctx, s.Plugin, s.Dir, Config{Variant: r.Variant, Layout: l, Slots: r.Slots, MaxCapacity: c.Capacity(),
		Seed: r.BackgroundSeed, Value: mode})
	if err != nil {
		return nil, err
	}
	defer t.Close(ctx)
	h := s.ReplayHeader(r)
	h.Slots = r.Slots
	if mode == layout.Exact {
		h.About = "fp8 values judged bit-exact"
	}
	return kind.Replay(ctx, &System{Target: t}, Schema, h, r, l, c, c.Padding.String())
}
