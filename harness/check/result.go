package check

import (
	"context"
	"fmt"
	"time"

	"github.com/kvharness/kvharness/harness/oracle"
	"github.com/kvharness/kvharness/harness/workload"
)

// Result is the verdict on one case.
type Result struct {
	Case       workload.Case
	Violations []oracle.Violation
}

// Failed reports whether any invariant was violated.
func (r *Result) Failed() bool { return len(r.Violations) > 0 }

// Has reports whether a violation of kind k was found.
func (r *Result) Has(k oracle.Kind) bool {
	for _, v := range r.Violations {
		if v.Kind == k {
			return true
		}
	}
	return false
}

// Primary is the kind a report leads with: the first in oracle.Kinds order.
func (r *Result) Primary() oracle.Kind {
	for _, k := range oracle.Kinds {
		if r.Has(k) {
			return k
		}
	}
	return ""
}

// Check runs c as given, again on a copy of the pool, and with its valid
// rows alone on another copy, in one round trip, and classifies what it
// finds.
func (t *Target) Check(ctx context.Context, c *workload.Store) (*Result, error) {
	start := time.Now()
	sc := oracle.NewStoreCheck(t.Layout, t.Region(), uint64(t.Seed), c, t.Declared)
	t.clock("prepare", start)
	batch := []run{{poolCase, c}, {poolRepeat, c}}
	padded := c.Valid > 0 && c.Valid < c.Capacity()
	if padded {
		batch = append(batch, run{poolUnpadded, c.Unpadded()})
	}
	deltas, err := t.runs(ctx, sc.Rows(), batch...)
	if err != nil {
		return nil, err
	}
	first, again := deltas[0], deltas[1]
	unpadded := first // without padded rows a case is its own unpadded twin
	switch {
	case padded:
		unpadded = deltas[2]
	case c.Valid == 0:
		unpadded = oracle.Delta{} // storing no rows changes nothing
	}
	defer t.clock("classify", time.Now())
	res := &Result{Case: c}
	if t.GeometryViolation != nil {
		res.Violations = append(res.Violations, *t.GeometryViolation)
	}
	res.Violations = append(res.Violations, sc.Check(first)...)
	if !first.Equal(again) {
		res.Violations = append(res.Violations, compare(oracle.Determinism, first, again,
			"running the same case twice left different bytes"))
	}
	if !first.Equal(unpadded) {
		res.Violations = append(res.Violations, compare(oracle.Differential, unpadded, first,
			fmt.Sprintf("the padded run (C=%d) differs from a run of its %d valid rows alone", c.Capacity(), c.Valid)))
	}
	return res, nil
}
