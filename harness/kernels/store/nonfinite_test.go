package store

import (
	"testing"

	"github.com/kvharness/kvharness/harness/layout"
	"github.com/kvharness/kvharness/harness/oracle"
	"github.com/kvharness/kvharness/harness/workload"
)

// nonFiniteFixture is a case of a non-finite valid row (row 0, slot 5) and
// a normal one (row 1, slot 9), judged by fp8-paged under policy.
func nonFiniteFixture(t *testing.T, policy layout.NonFinite) *fixture {
	t.Helper()
	c := oracleCase(PadNone, 2, 5, 9)
	c.Rows[0].Kind = workload.RowNonFinite
	f := newFixture(t, "fp8-paged", c)
	l, err := f.l.WithRecipe(&layout.Recipe{NonFinite: policy})
	if err != nil {
		t.Fatal(err)
	}
	f.l = l
	f.sc = NewOracle(l, f.region, seed, c, oracle.Declared{BytesPerToken: l.BytesPerToken(), PageBytes: l.PageBytes()})
	return f
}

// TestNonFiniteRows: under propagate the reference encoding of a row of
// ±Inf and NaN passes and other bytes in its record fail (the recipe says
// what must be there); under contained its record may hold anything (even
// the background), but a byte written outside it still fails.
func TestNonFiniteRows(t *testing.T) {
	f := nonFiniteFixture(t, layout.Propagate)
	f.storeValid()
	if vs := f.check(); len(vs) != 0 {
		t.Fatalf("propagate, reference bytes: %v", vs)
	}
	f.put(f.l.Footprint(5)[0].Off, []byte{0x11, 0x22})
	if vs := f.check(); len(vs) == 0 || vs[0].Kind != oracle.Value {
		t.Fatalf("propagate, two codes changed: %v; want a value violation", vs)
	}

	f = nonFiniteFixture(t, layout.Contained)
	f.store(1, 9) // row 0 never written: contained allows it
	f.put(f.l.Footprint(5)[0].Off, []byte{0x11, 0x22})
	if vs := f.check(); len(vs) != 0 {
		t.Fatalf("contained, row 0 left as garbage: %v", vs)
	}
	f.put(f.l.Footprint(6)[0].Off, []byte{0x33}) // slot 6: no row's
	if vs := f.check(); len(vs) == 0 || vs[0].Kind != oracle.Alias {
		t.Fatalf("contained, a write into slot 6: %v; want alias", vs)
	}
}
