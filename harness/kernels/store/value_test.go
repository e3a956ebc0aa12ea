package store

import (
	"encoding/binary"
	"math"
	"strings"
	"testing"

	"github.com/kvharness/kvharness/harness/layout"
	"github.com/kvharness/kvharness/harness/oracle"
	"github.com/kvharness/kvharness/harness/oracle/oracletest"
	"github.com/kvharness/kvharness/harness/workload"
)

// torchScale is PyTorch's per-token scale: max(amax, 1e-4) times the
// float32 reciprocal of 448, 1 ulp from amax/448 on many rows.
func torchScale(amax float32) float32 {
	r := float32(1) / float32(448)
	return max(amax, layout.ScaleFloor) * r
}

// epsScale is SGLang's Triton scale: max(amax, 1e-8)/448.
func epsScale(amax float32) float32 { return max(amax, float32(1e-8)) / 448 }

// storeWith writes row i into slot as a kernel computing each fp8 row's
// scale by scaleOf would (codes x/s under it); it reports whether the
// bytes differ from the reference encoding.
func (f *fixture) storeWith(i int, slot int64, scaleOf func(float32) float32) bool {
	row := f.c.Rows[i].Data(f.l.HeadDim)
	rec := f.l.Encode(row)
	q, _ := f.l.Quant("value")
	s := scaleOf(layout.Amax(row))
	vp, vs, _ := f.l.FieldSpan("value")
	sp, ss, _ := f.l.FieldSpan("scale")
	ref := string(rec[vp]) + string(rec[sp])
	for j, e := range row {
		rec[vp][vs.Off+j] = q.Code(layout.BF16ToFloat32(e), s)
	}
	binary.LittleEndian.PutUint32(rec[sp][ss.Off:], math.Float32bits(s))
	for p, span := range f.l.Footprint(slot) {
		f.put(span.Off, rec[p])
	}
	return string(rec[vp])+string(rec[sp]) != ref
}

func kindCase(p Padding, valid int, kinds []workload.RowKind, loc ...int64) *Case {
	c := oracleCase(p, valid, loc...)
	for i := range c.Rows {
		c.Rows[i].Kind = kinds[i%len(kinds)]
	}
	return c
}

// A kernel whose arithmetic is PyTorch's (a scale 1 ulp from the
// recipe's, codes following it) stores correct rows: nothing is wrong,
// on either fp8 layout. Exact judgement rejects the same bytes.
func TestToleratedArithmeticPasses(t *testing.T) {
	for _, name := range []string{"fp8-rows", "fp8-paged"} {
		c := oracleCase(PadCount, 8, 0, 1, 63, 64, 65, 100, 200, 255, 7)
		f := newFixture(t, name, c)
		differ := 0
		for i := range c.Valid {
			if f.storeWith(i, c.Loc[i], torchScale) {
				differ++
			}
		}
		if differ == 0 {
			t.Fatalf("%s: PyTorch's arithmetic left every row bit-exact: the test tests nothing", name)
		}
		if vs := f.check(); len(vs) != 0 {
			t.Errorf("%s: %d of %d rows not bit-exact, violations %v", name, differ, c.Valid, vs)
		}
		f.sc.Mode = layout.Exact
		v := oracletest.Only(t, f.check(), oracle.Value)
		if !strings.Contains(v.Detail, "exact judgement") {
			t.Errorf("%s exact: %v", name, v)
		}
	}
}

// A pad-unaware store with PyTorch's arithmetic is still caught as
// padding: a stale slot of a live row, and a slot of no valid row.
func TestPaddingUnderToleratedArithmetic(t *testing.T) {
	c := oracleCase(PadCount, 3, 5, 6, 7, 6, 40)
	f := newFixture(t, "fp8-rows", c)
	for i, slot := range c.Loc { // every row, padded ones included
		f.storeWith(i, slot, torchScale)
	}
	vs := f.check()
	oracletest.Only(t, vs, oracle.Padding) // the padded row's bytes over slot 6, tolerated, are still all its own
	slots := map[int64]bool{}
	for _, v := range vs {
		if v.Kind == oracle.Padding {
			slots[v.Slot] = true
		}
	}
	if !slots[6] || !slots[40] {
		t.Errorf("padding found in slots %v, want 6 and 40: %v", slots, vs)
	}
}

// Bytes per token as an element count, with PyTorch's arithmetic: still a
// stride violation, and no value or alias one.
func TestStrideUnderToleratedArithmetic(t *testing.T) {
	c := oracleCase(PadNone, 3, 5, 6, 9)
	f := newFixture(t, "fp8-rows", c)
	scratch := newFixture(t, "fp8-rows", c)
	for i, slot := range c.Loc {
		scratch.storeWith(i, slot, torchScale)
		sp := f.l.Footprint(slot)[0]
		rec := scratch.mem[sp.Off+scratch.region.GuardBefore.Len : sp.End()+scratch.region.GuardBefore.Len]
		f.put(int(slot)*128, rec)
	}
	vs := f.check()
	if !oracle.HasKind(vs, oracle.Stride) || oracle.HasKind(vs, oracle.Alias) || oracle.HasKind(vs, oracle.Padding) {
		t.Errorf("want stride, no alias or padding: %v", vs)
	}
}

// A kernel with eps 1e-8 and the default recipe's judgement: zero and
// tiny rows fail, each value violation naming the eps that explains the
// bytes and how to declare it. With a second bug in the case the note is
// withheld: no declaration explains the case.
func TestEpsNote(t *testing.T) {
	kinds := []workload.RowKind{workload.RowZero, workload.RowTiny, workload.RowNormal}
	c := kindCase(PadNone, 3, kinds, 3, 4, 5)
	f := newFixture(t, "fp8-rows", c)
	for i, slot := range c.Loc {
		f.storeWith(i, slot, epsScale)
	}
	vs := f.check()
	oracletest.Only(t, vs, oracle.Value)
	rows := map[int]bool{}
	for _, v := range vs {
		rows[v.Row] = true
		if !strings.Contains(v.Detail, "scale rule") || !strings.Contains(v.Detail, "the bytes match eps 1e-8") ||
			!strings.Contains(v.Detail, "declare it in the plugin's recipe") {
			t.Errorf("violation %v: want the scale rule and the eps 1e-8 note", v)
		}
	}
	if !rows[0] || !rows[1] || rows[2] {
		t.Errorf("rows with violations %v, want the zero and the tiny row", rows)
	}
	code := f.l.Footprint(5)[0].Off + 3
	f.put(code, []byte{f.mem[code+f.region.GuardBefore.Len] ^ 0x11})
	vs = f.check()
	for _, v := range vs {
		if strings.Contains(v.Detail, "eps") {
			t.Errorf("a case with a code bug still says %q", v.Detail)
		}
	}
	if len(vs) < 3 {
		t.Errorf("want the two eps rows and the code bug: %v", vs)
	}
}

// DeepSeek-V4's pad byte is don't-care in a valid row's slot, but a pad
// byte of a padded row's target still counts for the padding property;
// a layout can require zero.
func TestPadBytes(t *testing.T) {
	c := oracleCase(PadSink, 2, 3, 70, 0)
	f := newFixture(t, "dsv4-main", c)
	f.storeValid()
	for _, slot := range c.Loc[:2] {
		f.put(f.l.Footprint(slot)[1].Off+7, []byte{0xa5})
	}
	if vs := f.check(); len(vs) != 0 {
		t.Fatalf("pad bytes of valid rows: %v", vs)
	}
	f.put(f.l.Footprint(0)[1].Off+7, []byte{0xa5}) // the sink's pad byte
	if v := oracletest.Only(t, f.check(), oracle.Padding); v.Slot != 0 || v.Field != "pad" || v.Len != 1 {
		t.Errorf("sink pad byte: %v", v)
	}

	zero := *f.l
	zero.Fields = append([]layout.Field(nil), f.l.Fields...)
	for i := range zero.Fields {
		if zero.Fields[i].Kind == layout.KindPad {
			zero.Fields[i].Policy = layout.PadZero
		}
	}
	l, err := layout.Parse(zero.JSON(), 64)
	if err != nil {
		t.Fatal(err)
	}
	f = newFixture(t, "dsv4-main", oracleCase(PadNone, 1, 3))
	f.l = l
	f.sc = NewOracle(l, f.region, seed, f.c, f.sc.Declared)
	f.storeValid()
	f.put(l.Footprint(3)[1].Off+7, []byte{0xa5})
	v := oracletest.Only(t, f.check(), oracle.Value)
	if v.Field != "pad" || !strings.Contains(v.Detail, "pad rule") {
		t.Errorf("zero policy: %v", v)
	}
}

// A declared recipe that does not fit its layout is an error naming the
// plugin, the layout and the field; none declared keeps the layout's.
func TestDeclaredLayout(t *testing.T) {
	mla, err := layout.Builtin("dsv4-main", 0, 64)
	if err != nil {
		t.Fatal(err)
	}
	bf16, err := layout.Builtin("bf16", 0, 64)
	if err != nil {
		t.Fatal(err)
	}
	if l, err := declaredLayout(mla, oracle.Declared{}, "p"); err != nil || l != mla {
		t.Errorf("nothing declared: %v, %v", l, err)
	}
	for _, tc := range []struct {
		l    *layout.Layout
		r    layout.Recipe
		want string
	}{
		{mla, layout.Recipe{Scale: layout.ScaleF32}, `plugin p declares a recipe for layout dsv4-main that does not fit it: invalid layout "dsv4-main": field "nope": recipe scale "f32"`},
		{mla, layout.Recipe{Eps: new(2.0)}, "recipe eps 2"},
		{bf16, layout.Recipe{Eps: new(1e-8)}, "layout bf16, which has no fp8 fields"},
	} {
		_, err := declaredLayout(tc.l, oracle.Declared{Recipe: &tc.r}, "p")
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s %v: %v, want %q", tc.l.Name, tc.r, err, tc.want)
		}
	}
	l, err := declaredLayout(mla, oracle.Declared{Recipe: &layout.Recipe{Eps: new(1e-8)}}, "p")
	if q, _ := l.Quant("nope"); err != nil || q.Eps != 1e-8 || !q.Pow2 {
		t.Errorf("eps 1e-8 on dsv4-main: %+v, %v", q, err)
	}
}
