package read

import (
	"context"
	"fmt"
	"math"

	"github.com/kvharness/kvharness/harness/oracle"
	"github.com/kvharness/kvharness/harness/target"
)

// CheckRead runs a read case twice and judges it: the pool and guards may
// hold only the harness's key writes (readonly, scratch), staging only
// the inputs as staged and the out windows (readonly, scratch), the out
// windows the reference top k (result, score), and the second run must
// leave exactly what the first did (determinism).
func (t *Target) Check(ctx context.Context, c *Case) (*Result, error) {
	if err := c.Admits(t.NonFinite); err != nil {
		return nil, err
	}
	opts := t.Options
	opts.NonFinite = t.NonFinite
	rc := NewOracle(t.Layout, t.Region(), uint64(t.Seed), c, opts)
	first, again, err := target.Twice(ctx, t.run, rc)
	if err != nil {
		return nil, err
	}
	res := &Result{}
	if t.GeometryViolation != nil {
		res.Violations = append(res.Violations, *t.GeometryViolation)
	}
	res.Violations = append(res.Violations, rc.CheckPool(first.delta)...)
	res.Violations = append(res.Violations, first.staging...)
	res.Violations = append(res.Violations, rc.CheckResult(first.out)...)
	if v := rc.sameOutput(first.out, again.out); v != nil {
		res.Violations = append(res.Violations, *v)
	}
	if !first.delta.Equal(again.delta) {
		res.Violations = append(res.Violations, oracle.Compare(oracle.Determinism, first.delta, again.delta,
			"running the same read twice left different pool bytes"))
	}
	return res, nil
}

// sameOutput compares two runs' out windows: slots exactly, scores bit
// for bit (any NaN equals any NaN), but for the requests the contained
// policy leaves unjudged.
func (rc *Oracle) sameOutput(a, b Output) *oracle.Violation {
	k := rc.Case.K
	for i := range a.Slots {
		x, y := a.Scores[i], b.Scores[i]
		if a.Slots[i] == b.Slots[i] && (math.Float32bits(x) == math.Float32bits(y) || x != x && y != y) || rc.Contained(i/k) {
			continue
		}
		r, rank := i/k, i%k
		return &oracle.Violation{Kind: oracle.Determinism, Row: r, Field: "request",
			Detail: fmt.Sprintf("request %d rank %d: the first run returned slot %d score %g, the second slot %d score %g",
				r, rank, a.Slots[i], x, b.Slots[i], y)}
	}
	return nil
}
