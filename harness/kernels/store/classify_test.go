package store

import (
	"strings"
	"testing"

	"github.com/kvharness/kvharness/harness/oracle"
	"github.com/kvharness/kvharness/harness/oracle/oracletest"
	"github.com/kvharness/kvharness/harness/workload"
)

// coincident finds the seed of a padded row whose record shares at least
// one byte, at the same offset, with got but is not got: the situation
// in which a byte-by-byte classifier calls a value bug padding.
func coincident(t *testing.T, f *fixture, row int, got []byte) {
	t.Helper()
	for s := uint64(1); s < 500; s++ {
		f.c.Rows[row].Seed = s
		f.sc = NewOracle(f.l, f.region, seed, f.c, f.sc.Declared)
		rec := f.l.Encode(f.c.Rows[row].Data(f.l.HeadDim))[0]
		n := 0
		for i := range got {
			if rec[i] == got[i] {
				n++
			}
		}
		if n >= 1 && n < len(got)/8 {
			return
		}
	}
	t.Fatal("no padded row shares a byte with the wrong record")
}

// A byte-order bug under count padding whose padded row aims at the same
// slot: one byte of the swapped row happens to equal the padded row's
// byte. The bytes are the valid row's, swapped: value, not padding.
func TestByteOrderIsValueNotPadding(t *testing.T) {
	f := newFixture(t, "bf16", oracleCase(PadCount, 1, 9, 9))
	rec := f.l.Encode(f.c.Rows[0].Data(128))[0]
	sw := make([]byte, len(rec))
	for i := 0; i < len(rec); i += 2 {
		sw[i], sw[i+1] = rec[i+1], rec[i]
	}
	coincident(t, f, 1, sw)
	f.put(9*256, sw)
	v := oracletest.Only(t, f.check(), oracle.Value)
	if v.Row != 0 || v.Tie != "" || !strings.Contains(v.Detail, "swapped") {
		t.Errorf("violation %v: want row 0's value, its bytes swapped, no tie", v)
	}
	if v.Values == nil || v.Values.Format != "bf16" || len(v.Values.Want) != maxValues {
		t.Errorf("values %+v: want %d decoded bf16 elements", v.Values, maxValues)
	}
}

// A dropped row under count padding: its footprint holds the background,
// a few bytes of which equal the padded row's. Missing, not padding.
func TestDroppedRowIsMissingNotPadding(t *testing.T) {
	f := newFixture(t, "fp8-rows", oracleCase(PadCount, 1, 9, 9))
	coincident(t, f, 1, f.region.Background(seed, 9*132, 132))
	vs := f.check()
	if v := oracletest.Only(t, vs, oracle.Missing); v.Row != 0 || v.Slot != 9 {
		t.Errorf("violation %v: want row 0 in slot 9 missing", v)
	}
}

// One wrong byte that the padded row would also write there: one byte
// cannot tell value from padding, and the report says so.
func TestOneByteIsATie(t *testing.T) {
	f := newFixture(t, "bf16", oracleCase(PadCount, 1, 9, 9))
	f.storeValid()
	want := f.l.Encode(f.c.Rows[0].Data(128))[0]
	pad := f.l.Encode(f.c.Rows[1].Data(128))[0]
	k := 0
	for want[k] == pad[k] {
		k++
	}
	f.put(9*256+k, pad[k:k+1])
	v := oracletest.Only(t, f.check(), oracle.Value)
	if v.Tie != oracle.Padding || !strings.Contains(v.String(), "value or padding: both fit") {
		t.Errorf("violation %v: want a value tied with padding", v)
	}
}

// The padded row's whole record over the valid row's: padding, no tie,
// named as the race of the slot's two writers.
func TestPaddingRecordIsNotATie(t *testing.T) {
	f := newFixture(t, "fp8-paged", oracleCase(PadCount, 1, 9, 9))
	f.storeValid()
	f.store(1, 9)
	for _, v := range f.check() {
		if v.Kind != oracle.Padding || v.Tie != "" || v.Row != 1 || v.Race == nil || !strings.Contains(v.Detail, "padded row 1 and valid row 0 both write slot 9") {
			t.Errorf("violation %v: want padded row 1 over valid row 0, untied, a race", v)
		}
	}
}

// Changed bytes in the sink that are no padded row's data: the slot is a
// padded row's target and no valid row's, so padding, tied with alias.
func TestForeignBytesInSinkAreATie(t *testing.T) {
	f := newFixture(t, "bf16", oracleCase(PadSink, 1, 7, 0))
	f.storeValid()
	f.put(0, []byte{1, 2, 3, 4})
	if v := oracletest.Only(t, f.check(), oracle.Padding); v.Tie != oracle.Alias || v.Row != 1 {
		t.Errorf("violation %v: want padding tied with alias", v)
	}
}

// Row 1's record in row 0's slot (and row 1's slot never written): the
// report names the row whose record it is.
func TestAnotherRowsRecordIsNamed(t *testing.T) {
	f := newFixture(t, "bf16", oracleCase(PadNone, 2, 3, 4))
	f.store(1, 3)
	vs := f.check()
	if !oracle.HasKind(vs, oracle.Missing) || !oracle.HasKind(vs, oracle.Value) || oracle.HasKind(vs, oracle.Padding) {
		t.Fatalf("want value and missing: %v", vs)
	}
	for _, v := range vs {
		if v.Kind == oracle.Value && (v.Row != 0 || !strings.Contains(v.Detail, "holds valid row 1's record")) {
			t.Errorf("violation %v: want row 0 holding row 1's record", v)
		}
	}
}

// fp8-rows with the scale first: a layout misreading (the fields in
// another order), not a value bug.
func TestScaleFirstIsStride(t *testing.T) {
	f := newFixture(t, "fp8-rows", oracleCase(PadNone, 2, 5, 6))
	for i, slot := range f.c.Loc {
		rec := f.l.Encode(f.c.Rows[i].Data(128))[0]
		f.put(int(slot)*132, append(append([]byte(nil), rec[128:]...), rec[:128]...))
	}
	v := oracletest.Only(t, f.check(), oracle.Stride)
	if !strings.Contains(v.Detail, "scale, value") {
		t.Errorf("violation %v: want the fields named in their wrong order", v)
	}
}

// A zeroed scale: value, with the scale decoded on both sides.
func TestZeroScaleDecoded(t *testing.T) {
	f := newFixture(t, "fp8-paged", oracleCase(PadNone, 1, 70))
	f.c.Rows[0].Kind = workload.RowNormal
	f.storeValid()
	f.put(f.l.Footprint(70)[1].Off, make([]byte, 4))
	v := oracletest.Only(t, f.check(), oracle.Value)
	if v.Values == nil || v.Values.Format != "scale-f32" || v.Values.Got[0] != "0" || v.Values.Want[0] == "0" {
		t.Errorf("values %+v: want the reference scale beside 0", v.Values)
	}
}

// Codes decoded with the scale each side holds: a wrong code in a row
// whose scale is right reads as want×s beside got×s.
func TestCodesDecodedWithScale(t *testing.T) {
	f := newFixture(t, "fp8-rows", oracleCase(PadNone, 1, 5))
	f.storeValid()
	f.put(5*132+3, []byte{0x7e})
	v := oracletest.Only(t, f.check(), oracle.Value)
	if v.Values == nil || v.Values.Format != "e4m3" || len(v.Values.Scale) != 2 || v.Values.Scale[0] != v.Values.Scale[1] {
		t.Fatalf("values %+v: want e4m3 codes with one scale", v.Values)
	}
	if v.Values.Want[0] == v.Values.Got[0] {
		t.Errorf("values %+v: the changed code decodes as the reference", v.Values)
	}
}

// A padded -1 row stored into the last slot, which a valid row owns:
// padding (a padded row's record), not a value bug of the valid row.
func TestWrappedPaddedRowIsPadding(t *testing.T) {
	f := newFixture(t, "bf16", oracleCase(PadMinus1, 1, 255, -1))
	f.storeValid()
	f.store(1, 255)
	v := oracletest.Only(t, f.check(), oracle.Padding)
	if v.Row != 1 || v.Slot != 255 || !strings.Contains(v.Detail, "loc -1) stored into slot 255") {
		t.Errorf("violation %v: want padded row 1's record named in slot 255", v)
	}
}

// A scale taken from half the row under sink padding, where the padded
// row's whole-row scale happens to equal it (scales are a bf16 maximum
// over 448: few values, so two rows share one often): the scale plane of
// the valid row's slot holds the padded row's scale, its codes do not
// hold the padded row's codes. A kernel writes a record whole, so this
// is the valid row's value bug, not a padded row stored into its slot.
func TestOnePlaneOfAPaddedRecordIsValue(t *testing.T) {
	f := newFixture(t, "fp8-paged", oracleCase(PadSink, 1, 1, 0))
	f.storeValid()
	fp := f.l.Footprint(1)
	pad := f.l.Encode(f.c.Rows[1].Data(128))
	valid := f.l.Encode(f.c.Rows[0].Data(128))
	if string(pad[1]) == string(valid[1]) {
		t.Fatal("the rows share a scale: pick other seeds")
	}
	f.put(fp[1].Off, pad[1]) // the scale plane: the padded row's scale
	codes := append([]byte(nil), valid[0]...)
	for i := range codes {
		codes[i]++ // the codes at the wrong scale: none is the padded row's
	}
	f.put(fp[0].Off, codes)
	for _, v := range f.check() {
		if v.Kind != oracle.Value || v.Row != 0 || v.Slot != 1 {
			t.Errorf("violation %v: want only row 0's value in slot 1", v)
		}
	}
}
