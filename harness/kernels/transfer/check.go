package transfer

import (
	"context"
	"fmt"

	"github.com/kvharness/kvharness/harness/oracle"
)

// Check runs a transfer case twice, one Transfer call each (the second is
// the determinism check), and judges the first run's descriptors and bytes.
// Nothing is staged: the request carries the whole case.
func (t *Target) Check(ctx context.Context, c *Case) (*Result, error) {
	if c.Geometry.Key() != t.Geometry.Key() {
		return nil, fmt.Errorf("transfer case over %v, target over %v: open a target for the case's geometry", c.Geometry, t.Geometry)
	}
	if err := c.Validate(0); err != nil {
		return nil, fmt.Errorf("transfer case: %w", err)
	}
	req := t.Request(c)
	first, again, err := t.runTwice(ctx, c, req)
	if err != nil {
		return nil, err
	}
	out := NewOracle(t.Buffers, c).Check(first.descs, first.src, first.dst)
	res := &Result{Descriptors: first.descs, Digests: out.Digests}
	res.Add(t.GeometryViolations...)
	res.Add(out.Violations...)
	res.Add(t.stagingViolations(first)...)
	if !first.equal(again) {
		res.Add(t.determinism(first, again))
	}
	return res, nil
}

// stagingViolations reports writes into the staging window: a transfer
// has no inputs there and writes only destination pages.
func (t *Target) stagingViolations(r transferRun) []Violation {
	var out []Violation
	for _, w := range r.staging {
		v := NewViolation(Outside)
		v.Off, v.Len = w.Off-t.Pools.Staging.Off, w.Len
		v.Detail = "the staging window changed (offsets from its start): a transfer writes destination pages only"
		out = append(out, v)
	}
	return out
}

// determinism describes the first difference between two runs of a case:
// in the descriptors, or in the bytes of one region.
func (t *Target) determinism(a, b transferRun) Violation {
	v := NewViolation(oracle.Determinism)
	for i := range min(len(a.descs), len(b.descs)) {
		if a.descs[i] != b.descs[i] {
			v.Descriptor, v.Desc = i, &a.descs[i]
			v.Detail = fmt.Sprintf("running the same transfer twice answered different descriptors: #%d was %s, then %s", i, a.descs[i], b.descs[i])
			return v
		}
	}
	if len(a.descs) != len(b.descs) {
		v.Detail = fmt.Sprintf("running the same transfer twice answered %d, then %d descriptors", len(a.descs), len(b.descs))
		return v
	}
	for i := range t.Buffers {
		for _, side := range []struct {
			name   string
			da, db oracle.Delta
		}{{"source", a.src[i], b.src[i]}, {"destination", a.dst[i], b.dst[i]}} {
			if !side.da.Equal(side.db) {
				return bytesDiffer(v, t.Buffers[i].Name, side.name, side.da, side.db)
			}
		}
	}
	v.Detail = "running the same transfer twice changed different bytes of the staging window"
	return v
}

func bytesDiffer(v Violation, buffer, side string, a, b oracle.Delta) Violation {
	c := oracle.Compare(oracle.Determinism, a, b, "")
	v.Buffer, v.Off, v.Len, v.Want, v.Got = buffer, c.Off, c.Len, c.Want, c.Got
	v.Detail = fmt.Sprintf("running the same transfer twice left different bytes in the %s pool (want: the first run, got: the second)", side)
	return v
}
