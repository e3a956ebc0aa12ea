package layout

import (
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"
)

// TestWithPadPolicy: a kernel's declared pad policy replaces the
// layout's default. Declared zero: a pad byte left as it was is a pad
// finding. Declared keep: the row's judgement leaves the byte alone and
// JudgeKept holds it to what the pool held. Declared nothing: the
// layout's own policy.
func TestWithPadPolicy(t *testing.T) {
	l := mustBuiltin(t, "dsv4-main", 512, 64)
	if got := l.PadPolicies(); !reflect.DeepEqual(got, map[string]PadPolicy{"pad": PadAny}) {
		t.Errorf("policies %v", got)
	}
	if same, err := l.WithPadPolicy(""); err != nil || same != l {
		t.Errorf("no declaration: %v, %v", same, err)
	}
	row := randomRow(rand.New(rand.NewPCG(3, 3)), 512, 1)
	left := func(l *Layout) [][]byte { // the kernel left the pad byte holding 0xab
		recs := l.Encode(row)
		recs[1][7] = 0xab
		return recs
	}
	if fs := l.Judge(row, left(l), ByRecipe); len(fs) > 0 {
		t.Errorf("default policy: %s", Summary(fs))
	}

	zero, err := l.WithPadPolicy(PadZero)
	if err != nil {
		t.Fatal(err)
	}
	fs := zero.Judge(row, left(zero), ByRecipe)
	if len(fs) != 1 || fs[0].Rule != RulePad || fs[0].Field != "pad" || !reflect.DeepEqual(fs[0].Bytes, []int{7}) {
		t.Errorf("declared zero: %s", Summary(fs))
	}
	if zero.PadPolicies()["pad"] != PadZero || l.PadPolicies()["pad"] != PadAny {
		t.Errorf("the declaration leaked into the layout it came from")
	}

	keep, err := l.WithPadPolicy(PadKeep)
	if err != nil {
		t.Fatal(err)
	}
	if fs := keep.Judge(row, left(keep), ByRecipe); len(fs) > 0 {
		t.Errorf("declared keep: the row's judgement flags %s", Summary(fs))
	}
	if got := keep.Kept(1); !reflect.DeepEqual(got, []Span{{7, 1}}) || keep.Kept(0) != nil {
		t.Errorf("kept spans %v, %v", keep.Kept(0), keep.Kept(1))
	}
	before := keep.Encode(row)
	before[1][7] = 0xab
	if fs := keep.JudgeKept(left(keep), before); len(fs) > 0 {
		t.Errorf("kept byte unchanged, yet %s", Summary(fs))
	}
	before[1][7] = 0x5c
	fs = keep.JudgeKept(left(keep), before)
	if len(fs) != 1 || fs[0].Field != "pad" || !fs[0].Kept || fs[0].Want[0] != 0x5c || !strings.Contains(fs[0].String(), "pad policy is keep") {
		t.Errorf("kept byte written: %s", Summary(fs))
	}

	if _, err := l.WithPadPolicy("sometimes"); err == nil || !strings.Contains(err.Error(), `pad policy "sometimes"`) {
		t.Errorf("a bad policy: %v", err)
	}
	if _, err := mustBuiltin(t, "bf16", 128, 16).WithPadPolicy(PadZero); err == nil || !strings.Contains(err.Error(), "no pad fields") {
		t.Errorf("a layout without pads: %v", err)
	}
}

// TestPlacedPadPolicy: pad bytes spread over pieces (a pad per head of an
// HND record) follow the policy piece by piece.
func TestPlacedPadPolicy(t *testing.T) {
	const h, d, p = 3, 8, 4
	mk := func(policy PadPolicy) *Layout {
		l := &Layout{Name: "padded-hnd", HeadDim: d, PageSize: p, Heads: h, Regions: []Region{{Name: "r"}}, Fields: []Field{
			// each head's record: 8 bf16 then 2 pad bytes, heads apart
			{Name: "v", Kind: KindBF16, To: d, Place: &Place{Region: "r", Maps: []Map{
				{Of: []Coord{CoordHead}, Shape: []int{h}, Stride: []int{p * 18}},
				{Of: []Coord{CoordSlot}, Shape: []int{p}, Stride: []int{18}},
				{Of: []Coord{CoordUnit}, Shape: []int{d}, Stride: []int{2}}}}},
			{Name: "pad", Kind: KindPad, Bytes: 2, Policy: policy, Place: &Place{Region: "r", Offset: 16, Maps: []Map{
				{Of: []Coord{CoordHead}, Shape: []int{h}, Stride: []int{p * 18}},
				{Of: []Coord{CoordSlot}, Shape: []int{p}, Stride: []int{18}},
				{Of: []Coord{CoordUnit}, Shape: []int{2}, Stride: []int{1}}}}},
		}}
		if err := l.compile(); err != nil {
			t.Fatal(err)
		}
		return l
	}
	l := mk("")
	if l.NumPieces() != 2*h {
		t.Fatalf("%d pieces, want %d", l.NumPieces(), 2*h)
	}
	row := randomRow(rand.New(rand.NewPCG(1, 2)), h*d, 1)
	recs := l.Encode(row)
	for i := range l.NumPieces() {
		if fs := l.PlaneFields(i); fs[0] == "pad" && !reflect.DeepEqual(l.DontCare(i), []Span{{0, 2}}) {
			t.Errorf("piece %d: don't care %v", i, l.DontCare(i))
		}
	}
	zero, _ := l.WithPadPolicy(PadZero)
	recs[2*h-1][1] = 9 // the last head's second pad byte
	if fs := l.Judge(row, recs, ByRecipe); len(fs) > 0 {
		t.Errorf("any: %s", Summary(fs))
	}
	fs := zero.Judge(row, recs, ByRecipe)
	if len(fs) != 1 || fs[0].PieceOf(0) != 2*h-1 || fs[0].Bytes[0] != 1 {
		t.Errorf("zero: %+v", fs)
	}
}

// TestFindingBytesNamePieces: in a layout whose fields spread over
// pieces, a finding's bytes name the piece and offset of each damaged
// byte, and Want is what the judgement wants there.
func TestFindingBytesNamePieces(t *testing.T) {
	l, err := BuiltinDims("flashinfer-hnd", Dims{Heads: 4, HeadDim: 64, PageSize: 8})
	if err != nil {
		t.Fatal(err)
	}
	row := randomRow(rand.New(rand.NewPCG(4, 4)), l.RowElems(), 1)
	rng := rand.New(rand.NewPCG(5, 5))
	for range 50 {
		recs := l.Encode(row)
		want := l.Encode(row)
		damaged := map[[2]int]bool{}
		for range 1 + rng.IntN(4) {
			p := rng.IntN(len(recs))
			at := rng.IntN(len(recs[p]))
			recs[p][at] ^= 0x10
			damaged[[2]int{p, at}] = true
		}
		found := map[[2]int]bool{}
		for _, f := range l.Judge(row, recs, ByRecipe) {
			for j, b := range f.Bytes {
				p := f.PieceOf(j)
				if want[p][b] != f.Want[j] {
					t.Fatalf("%s: byte %d of piece %d wants %#02x, the reference holds %#02x", f, b, p, f.Want[j], want[p][b])
				}
				found[[2]int{p, b}] = true
			}
		}
		if !reflect.DeepEqual(found, damaged) {
			t.Fatalf("damaged %v, findings name %v", damaged, found)
		}
	}
}
