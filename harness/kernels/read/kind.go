package read

import (
	"context"
	"fmt"

	"golang.org/x/sys/unix"

	"github.com/kvharness/kvharness/harness/arena"
	"github.com/kvharness/kvharness/harness/fuzzing"
	"github.com/kvharness/kvharness/harness/kind"
	"github.com/kvharness/kvharness/harness/layout"
	"github.com/kvharness/kvharness/harness/plugin"
	"github.com/kvharness/kvharness/harness/pool"
	"github.com/kvharness/kvharness/harness/property"
	"github.com/kvharness/kvharness/harness/report"
	"github.com/kvharness/kvharness/harness/rundir"
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
		c.Variant, c.Layout, c.Slots, c.Seed, c.Backend = p.Variant, l, RowSlots(l, p.Slots, p.Far), p.Seed, p.Backend
		suite.Rows = append(suite.Rows, property.Row[*Target, *Case, *Result]{Layout: l, Label: Label, Key: l.Name,
			Open:   func(ctx context.Context, pl *plugin.Plugin) (*Target, error) { return Open(ctx, pl, s.Dir, c) },
			System: func(t *Target) property.System[*Case, *Result] { return NewSystem(t) }})
	}
	return suite
}

// valueLines is the header's account of the values a read's keys and
// queries hold (vec.go), ±Inf and NaN by the plugin's declared policy.
func valueLines(policy layout.NonFinite) []string {
	line := "values: keys zero, normal, tiny, outlier, huge, subnormal, signed-zero, boundary, max-finite (under zero, tiny, " +
		"subnormal and signed-zero queries only)"
	if policy == layout.NonFiniteUndeclared {
		return []string{line + "; queries the same but huge and max-finite",
			"not explored: ±Inf and NaN in keys and queries (the plugin declares no read non-finite policy: read_non_finite)"}
	}
	return []string{fmt.Sprintf("%s, non-finite; queries the same but huge and max-finite; ±Inf and NaN %s "+
		"(a request whose query or keys hold one is judged for form alone, every other request in full)", line, policy)}
}

// RowSlots is the pool of a row of layout l in a run of slots slots: as
// asked, or, when the run reaches far, raised to pool.FarSlots.
func RowSlots(l *layout.Layout, slots int, far bool) int {
	if far {
		return max(slots, pool.FarSlots(l))
	}
	return slots
}

// sparseDir reports whether arenas made in dir are sparse files (tmpfs).
func sparseDir(dir *rundir.Dir) bool {
	var st unix.Statfs_t
	return dir != nil && unix.Statfs(dir.Path, &st) == nil && st.Type == unix.TMPFS_MAGIC
}

func check(ctx context.Context, s *kind.Session, p kind.Params) (*report.Run, error) {
	sh, err := p.Spaces(ctx, s, p.Layouts)
	if err != nil {
		return nil, err
	}
	// Each layout's row draws its shape at its turn (its place in the
	// run's layouts): a run of three layouts covers an awkward head dim,
	// page size 1 and an engine's shape.
	var layouts []*layout.Layout
	for k, l := range p.Layouts {
		rl, err := sh.Row(ctx, s, p, l, k)
		if err != nil {
			return nil, err
		}
		layouts = append(layouts, rl)
	}
	p.Layouts = layouts
	// Far pools live in sparse memory (pool.FarSlots): host shared memory
	// in a tmpfs run directory, or a GPU's for a plugin that maps sparse
	// arenas; elsewhere the pool is the flags' as before.
	p.Far = p.Far && arena.Sparse(p.Backend, arena.Options{FDArenas: s.Desc.CUDAFDArenas, SparseArenas: s.Desc.CUDASparseArenas}) && (p.Place().OnDevice() || sparseDir(s.Dir))
	policy, err := Policy(s.Plugin.Name, s.Desc)
	if err != nil {
		return nil, err
	}
	h := p.Header(s)
	h.JSON = report.Object{{Key: "slots", Value: p.Slots}, {Key: "geometry", Value: sh.Covered(), OmitEmpty: true},
		{Key: "non_finite", Value: policy, OmitEmpty: true}}
	h.Coverage, h.Shapes = append(sh.Lines(), valueLines(policy)...), sh.Drawn()
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
	if err := c.Admits(t.NonFinite); err != nil {
		return nil, fmt.Errorf("the repro's case: %w", err)
	}
	h := s.ReplayHeader(r, b)
	h.Slots = r.Slots
	return kind.Replay(ctx, &System{Target: t, Cases: kind.Cases[*Case, *Gen]{Shrinker: Shrink}}, Schema, h, r, l, c, Label)
}
