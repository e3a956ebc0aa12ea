package check

import (
	"context"
	"fmt"

	"github.com/kvharness/kvharness/harness/oracle"
	"github.com/kvharness/kvharness/harness/workload"
)

// Result is the verdict on one case.
type Result struct {
	Case       *workload.Store
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

// Check runs c as given, again, and unpadded, and classifies what it finds.
func (t *Target) Check(ctx context.Context, c *workload.Store) (*Result, error) {
	sc := oracle.NewStoreCheck(t.Layout, t.Region(), t.Seed, c, t.Declared)
	res := &Result{Case: c}
	if t.GeometryViolation != nil {
		res.Violations = append(res.Violations, *t.GeometryViolation)
	}
	first, err := t.Run(ctx, c, sc.Rows())
	if err != nil {
		return nil, err
	}
	res.Violations = append(res.Violations, sc.Check(first)...)
	again, err := t.Run(ctx, c, sc.Rows())
	if err != nil {
		return nil, err
	}
	if !first.Equal(again) {
		res.Violations = append(res.Violations, compare(oracle.Determinism, first, again, t.Region().Pool.Off,
			"running the same case twice left different bytes"))
	}
	unpadded, err := t.runUnpadded(ctx, c, sc)
	if err != nil {
		return nil, err
	}
	if !first.Equal(unpadded) {
		res.Violations = append(res.Violations, compare(oracle.Differential, first, unpadded, t.Region().Pool.Off,
			fmt.Sprintf("the padded run (C=%d) differs from a run of its %d valid rows alone", c.Capacity(), c.Valid)))
	}
	return res, nil
}

func (t *Target) runUnpadded(ctx context.Context, c *workload.Store, sc *oracle.StoreCheck) (oracle.Delta, error) {
	if c.Valid == 0 {
		return oracle.Delta{}, nil // storing nothing changes nothing
	}
	if c.Valid == c.Capacity() {
		return t.Run(ctx, c, sc.Rows()) // already unpadded: a third identical run
	}
	return t.Run(ctx, c.Unpadded(), sc.Rows())
}
