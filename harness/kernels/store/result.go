package store

import (
	"context"
	"fmt"
	"time"

	"github.com/kvharness/kvharness/harness/oracle"
)

// Result is the verdict on one store case.
type Result struct {
	Violations []oracle.Violation
}

// Kinds are the store's violation kinds in report order: where a wrong
// byte landed (a padded row's target, a guard, a stride's misplacement,
// someone else's slot) before what is wrong inside a row's footprint, and
// the properties that compare runs last.
var Kinds = []oracle.Kind{oracle.Padding, oracle.Guard, oracle.Stride, oracle.Alias, oracle.Value, oracle.Missing,
	oracle.Geometry, oracle.Determinism, oracle.Differential}

// Failed reports whether any invariant was violated.
func (r *Result) Failed() bool { return len(r.Violations) > 0 }

// Has reports whether a violation of kind k was found.
func (r *Result) Has(k oracle.Kind) bool { return oracle.HasKind(r.Violations, k) }

// Primary is the kind a report leads with: the first in Kinds order.
func (r *Result) Primary() oracle.Kind { return oracle.First(Kinds, r.Has) }

// NumViolations counts the violations.
func (r *Result) NumViolations() int { return len(r.Violations) }

// Check runs c as given, again on a copy of the pool, and with its valid
// rows alone on another copy, in one round trip, and classifies what it
// finds. It scans the whole of each pool: its verdict is exact, whatever
// the plugin wrote and wherever (Target.CheckAhead's are proved so).
func (t *Target) Check(ctx context.Context, c *Case) (*Result, error) {
	t.stopAhead(ctx)
	start := time.Now()
	sc := NewOracle(t.Layout, t.Region(), uint64(t.Seed), c, t.Declared)
	t.clock("prepare", start)
	deltas, err := t.runs(ctx, sc.Rows(), runsOf(0, c)...)
	if err != nil {
		return nil, err
	}
	defer t.clock("classify", time.Now())
	return t.verdict(sc, deltas), nil
}

// runsOf are the runs that check c on a set: as given, again, and, when
// some rows are padding, its valid rows alone.
func runsOf(set int, c *Case) []run {
	batch := []run{{set, poolCase, c}, {set, poolRepeat, c}}
	if c.Valid > 0 && c.Valid < c.Capacity() {
		batch = append(batch, run{set, poolUnpadded, c.Unpadded()})
	}
	return batch
}

// verdict classifies what the runs of runsOf left: the first run against
// the reference, the second against the first (determinism), the
// unpadded one against the first (differential).
func (t *Target) verdict(sc *Oracle, deltas []oracle.Delta) *Result {
	c := sc.Case
	first, again := deltas[0], deltas[1]
	unpadded := first // without padded rows a case is its own unpadded twin
	switch {
	case len(deltas) > 2:
		unpadded = deltas[2]
	case c.Valid == 0:
		unpadded = oracle.Delta{} // storing no rows changes nothing
	}
	res := &Result{}
	if t.GeometryViolation != nil {
		res.Violations = append(res.Violations, *t.GeometryViolation)
	}
	res.Violations = append(res.Violations, sc.Check(first)...)
	if !first.Equal(again) {
		res.Violations = append(res.Violations, oracle.Compare(oracle.Determinism, first, again,
			"running the same case twice left different bytes"))
	}
	if !first.Equal(unpadded) {
		res.Violations = append(res.Violations, oracle.Compare(oracle.Differential, unpadded, first,
			fmt.Sprintf("the padded run (C=%d) differs from a run of its %d valid rows alone", c.Capacity(), c.Valid)))
	}
	return res
}
