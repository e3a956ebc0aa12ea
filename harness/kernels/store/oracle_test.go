package store

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/kvharness/kvharness/harness/internal/kindtest"
	"github.com/kvharness/kvharness/harness/layout"
	"github.com/kvharness/kvharness/harness/oracle"
	"github.com/kvharness/kvharness/harness/oracle/oracletest"
	"github.com/kvharness/kvharness/harness/pool"
	"github.com/kvharness/kvharness/harness/workload"
)

// fixture is a pool in plain memory: the oracle only ever sees deltas, so
// a test can play the kernel by writing bytes directly.
type fixture struct {
	t      testing.TB
	l      *layout.Layout
	region pool.Region
	c      *Case
	sc     *Oracle
	mem    []byte // the region's span, guards included
}

const seed = 42

func newFixture(t testing.TB, name string, c *Case) *fixture {
	t.Helper()
	l := kindtest.Layout(t, name, 0, 64) // 128, or the layout's fixed head dim
	g, err := pool.Plan([]pool.Spec{{Name: "p", Layout: l, Slots: 256}}, 0)
	if err != nil {
		t.Fatal(err)
	}
	r := g.Regions[0]
	f := &fixture{t: t, l: l, region: r, c: c, mem: pool.Background(seed, 0, r.Span().Len)}
	f.sc = NewOracle(l, r, seed, c, oracle.Declared{BytesPerToken: l.BytesPerToken(), PageBytes: l.PageBytes()})
	return f
}

// put writes b at pool offset off (negative: the leading guard).
func (f *fixture) put(off int, b []byte) { copy(f.mem[off+f.region.GuardBefore.Len:], b) }

// store writes row i's reference encoding into slot, as a kernel would.
func (f *fixture) store(row int, slot int64) {
	rec := f.l.Encode(f.c.Rows[row].Data(f.l.HeadDim))
	for p, sp := range f.l.Footprint(slot) {
		f.put(sp.Off, rec[p])
	}
}

// storeValid stores every valid row correctly.
func (f *fixture) storeValid() {
	for i := range f.c.Valid {
		f.store(i, f.c.Loc[i])
	}
}

func (f *fixture) check() []oracle.Violation { return f.sc.Check(f.delta()) }

// delta is what the fixture's writes changed, as a capture reports it.
func (f *fixture) delta() oracle.Delta {
	bg := pool.Background(seed, 0, len(f.mem))
	return kindtest.Delta(f.mem, bg, pool.Window{Len: len(f.mem)}, f.region.GuardBefore.Len)
}

func oracleCase(p Padding, valid int, loc ...int64) *Case {
	c := &Case{Padding: p, Valid: valid, Loc: loc}
	for i := range loc {
		c.Rows = append(c.Rows, workload.Row{Kind: workload.RowNormal, Seed: uint64(100 + i)})
	}
	return c
}

func TestCorrectStoreHasNoViolations(t *testing.T) {
	for _, name := range []string{"bf16", "fp8-paged", "fp8-rows"} {
		f := newFixture(t, name, oracleCase(PadCount, 3, 0, 63, 64, 5))
		f.storeValid()
		if vs := f.check(); len(vs) != 0 {
			t.Errorf("%s: %v", name, vs)
		}
	}
}

func TestPaddingIntoSink(t *testing.T) {
	f := newFixture(t, "bf16", oracleCase(PadSink, 1, 7, 0))
	f.storeValid()
	f.store(1, 0)
	v := oracletest.Only(t, f.check(), oracle.Padding)
	if v.Slot != 0 || v.Row != 1 || v.Off != 0 || v.Len != 256 {
		t.Errorf("violation %v: want row 1, slot 0, bytes [0,256)", v)
	}
}

// A stale padded slot that now belongs to a valid row: the padded row's
// data over the valid row's is padding, not a value bug.
func TestPaddingOverLiveSlot(t *testing.T) {
	f := newFixture(t, "fp8-rows", oracleCase(PadCount, 1, 9, 9))
	f.storeValid()
	f.store(1, 9)
	if v := oracletest.Only(t, f.check(), oracle.Padding); v.Slot != 9 || v.Row != 1 {
		t.Errorf("violation %v: want slot 9 written by padded row 1", v)
	}
}

func TestMinusOneLandsInGuard(t *testing.T) {
	f := newFixture(t, "fp8-paged", oracleCase(PadMinus1, 1, 3, -1))
	f.storeValid()
	f.store(1, -1)
	v := oracletest.Only(t, f.check(), oracle.Guard)
	if v.Slot != -1 || v.Off >= 0 {
		t.Errorf("violation %v: want slot -1 before the pool base", v)
	}
}

func TestAliasIntoUnrelatedSlot(t *testing.T) {
	f := newFixture(t, "bf16", oracleCase(PadNone, 1, 3))
	f.storeValid()
	f.put(200*256+10, []byte{1, 2, 3})
	v := oracletest.Only(t, f.check(), oracle.Alias)
	if v.Slot != 200 || v.Off != 200*256+10 || v.Row != oracle.NoRow {
		t.Errorf("violation %v: want slot 200 at its byte 10", v)
	}
}

func TestMissingRow(t *testing.T) {
	f := newFixture(t, "fp8-paged", oracleCase(PadNone, 2, 3, 4))
	f.store(0, 3)
	vs := f.check()
	oracletest.Only(t, vs, oracle.Missing)
	spans := f.l.Footprint(4)
	if len(vs) != len(spans) {
		t.Fatalf("%d missing violations, want one per plane (%d): %v", len(vs), len(spans), vs)
	}
	for i, v := range vs {
		if v.Row != 1 || v.Slot != 4 || v.Off != spans[i].Off || v.Len != spans[i].Len {
			t.Errorf("violation %v: want row 1 slot 4 bytes [%d,%d)", v, spans[i].Off, spans[i].End())
		}
	}
}

func TestValueByte(t *testing.T) {
	f := newFixture(t, "fp8-paged", oracleCase(PadNone, 1, 70))
	f.storeValid()
	scale := f.l.Footprint(70)[1].Off
	f.put(scale+2, []byte{0xee})
	v := oracletest.Only(t, f.check(), oracle.Value)
	if v.Row != 0 || v.Field != "scale" || v.Off != scale+2 || v.Len != 1 || v.Got[0] != 0xee {
		t.Errorf("violation %v: want row 0, field scale, 1 byte at %d", v, scale+2)
	}
}

// Interleaved records in a packed page: SGLang's layout written vLLM's way.
func TestStrideInterleavedIntoPacked(t *testing.T) {
	f := newFixture(t, "fp8-paged", oracleCase(PadNone, 3, 1, 2, 65))
	for i, slot := range f.c.Loc {
		rec := f.l.Encode(f.c.Rows[i].Data(128))
		f.put(int(slot)*132, append(append([]byte(nil), rec[0]...), rec[1]...))
	}
	vs := f.check()
	if !oracle.HasKind(vs, oracle.Stride) || oracle.HasKind(vs, oracle.Alias) {
		t.Errorf("want stride violations and no alias: %v", vs)
	}
}

// Bytes per token as an element count: 128-byte strides in 132-byte rows.
func TestStrideElementCount(t *testing.T) {
	f := newFixture(t, "fp8-rows", oracleCase(PadNone, 2, 5, 6))
	for i, slot := range f.c.Loc {
		rec := f.l.Encode(f.c.Rows[i].Data(128))
		f.put(int(slot)*128, rec[0])
	}
	if vs := f.check(); !oracle.HasKind(vs, oracle.Stride) || oracle.HasKind(vs, oracle.Missing) || oracle.HasKind(vs, oracle.Alias) {
		t.Errorf("want stride only: %v", vs)
	}
}

// A value bug is not a stride bug, even where bytes coincide: every code of
// a row forced to 0x00 must read as value.
func TestValueBugIsNotStride(t *testing.T) {
	f := newFixture(t, "fp8-paged", oracleCase(PadNone, 2, 5, 6))
	f.storeValid()
	f.put(f.l.Footprint(6)[0].Off, make([]byte, 128))
	if vs := f.check(); oracle.HasKind(vs, oracle.Stride) || !oracle.HasKind(vs, oracle.Value) {
		t.Errorf("want value only: %v", vs)
	}
}

func TestPagePaddingIsAlias(t *testing.T) {
	l, _ := layout.Builtin("dsv4-main", 512, 64)
	g, _ := pool.Plan([]pool.Spec{{Name: "p", Layout: l, Slots: 64}}, 0)
	r := g.Regions[0]
	c := oracleCase(PadNone, 1, 3)
	c.Rows[0].Kind = workload.RowZero
	sc := NewOracle(l, r, seed, c, oracle.Declared{})
	rec := l.Encode(c.Rows[0].Data(512))
	var d oracle.Delta
	for p, sp := range l.Footprint(3) {
		d.Windows = append(d.Windows, pool.Window{Off: sp.Off, Len: sp.Len})
		d.Bytes = append(d.Bytes, rec[p]...)
	}
	pad := 64 * 584 // first byte past the last scale record: page alignment padding
	d.Windows = append(d.Windows, pool.Window{Off: pad, Len: 1})
	d.Bytes = append(d.Bytes, ^r.Background(seed, pad, 1)[0])
	v := oracletest.Only(t, sc.Check(d), oracle.Alias)
	if v.HasSlot || v.Off != pad {
		t.Errorf("violation %v: want an unowned byte at %d", v, pad)
	}
}

// TestCachedRowsAgree: an oracle whose rows come from a target's row
// cache (small seeds, shared from case to case) holds the same rows and
// encodings as one that computes them, and classifies a wrong store the
// same, whether the cache was empty or filled by earlier cases; rows of
// large seeds are not cached.
func TestCachedRowsAgree(t *testing.T) {
	for _, name := range []string{"bf16", "fp8-paged", "dsv4-main"} {
		f := newFixture(t, name, &Case{Padding: PadCount, Valid: 40, Loc: make([]int64, 48), Rows: make([]workload.Row, 48)})
		for i := range f.c.Loc {
			f.c.Loc[i] = int64(5 * i % 250)
			f.c.Rows[i] = workload.Row{Kind: workload.RowKind(i % int(workload.RowGarbage+1)), Seed: uint64(i * 7 % cachedSeeds)}
		}
		f.c.Rows[3].Seed = 1 << 40
		f.sc = NewOracle(f.l, f.region, seed, f.c, f.sc.Declared)
		f.storeValid()
		f.store(41, 7) // a padded row over a live slot
		want := f.check()
		var cache rowCache
		for round := range 2 {
			sc := buildOracle(f.l, f.region, seed, f.c, f.sc.Declared, layout.Inputs{}, &cache)
			if diff := cmp.Diff(f.sc.rows, sc.rows); diff != "" {
				t.Fatalf("%s round %d: rows differ (-computed +cached):\n%s", name, round, diff)
			}
			if got := sc.Check(f.delta()); !cmp.Equal(want, got) {
				t.Fatalf("%s round %d: cached oracle finds %v; want %v", name, round, got, want)
			}
			if diff := cmp.Diff(f.sc.records, sc.records); diff != "" {
				t.Fatalf("%s round %d: records differ (-computed +cached):\n%s", name, round, diff)
			}
		}
		if len(want) == 0 {
			t.Fatalf("%s: the padded row over a live slot was not found", name)
		}
		if _, ok := cache.rows[f.c.Rows[3]]; ok || len(cache.rows) == 0 {
			t.Fatalf("%s: %d rows cached, the large seed's among them: %v", name, len(cache.rows), ok)
		}
	}
}
