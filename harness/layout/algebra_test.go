package layout

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"
)

// modelDims are the geometries the model tests draw from: head counts 1,
// 2, 4, 8, 16 and odd ones; head dims 64 to 576; page sizes 1 to 256
// where the layout takes them.
var modelDims = []Dims{
	{Heads: 1, HeadDim: 64, PageSize: 1},
	{Heads: 2, HeadDim: 128, PageSize: 16},
	{Heads: 3, HeadDim: 192, PageSize: 32},
	{Heads: 4, HeadDim: 64, PageSize: 4},
	{Heads: 5, HeadDim: 256, PageSize: 64},
	{Heads: 8, HeadDim: 128, PageSize: 128},
	{Heads: 16, HeadDim: 96, PageSize: 32},
	{Heads: 7, HeadDim: 576, PageSize: 256},
	{Heads: 1, HeadDim: 512, PageSize: 64},
}

// eachModel calls f for every model and every geometry of modelDims it
// takes (one head where it takes one, its own head dim where fixed); four
// of them under -short.
func eachModel(t *testing.T, f func(t *testing.T, name string, d Dims, l *Layout)) {
	t.Helper()
	dims := modelDims
	if testing.Short() {
		dims = []Dims{modelDims[0], modelDims[2], modelDims[5], modelDims[6]}
	}
	for _, name := range ModelNames() {
		m := models[name]
		for _, d := range dims {
			if m.onlyHeads != 0 {
				d.Heads = m.onlyHeads
			}
			if m.fixedDim != 0 {
				d.HeadDim = m.fixedDim
			}
			if m.dimMul != 0 && d.HeadDim%m.dimMul != 0 || m.pageMul != 0 && d.PageSize%m.pageMul != 0 {
				continue
			}
			l, err := BuiltinDims(name, d)
			if err != nil {
				t.Fatalf("%s %+v: %v", name, d, err)
			}
			t.Run(fmt.Sprintf("%s/h%d-d%d-p%d", name, d.Heads, d.HeadDim, d.PageSize), func(t *testing.T) { f(t, name, d, l) })
		}
	}
}

// TestModelsLocateInvertsFootprint checks every byte of a small pool of
// every model: the footprints of the pool's slots cover it without
// overlap (but for pad and alignment bytes), Locate names each byte's
// slot, field and piece, and UnitOffset agrees with both.
func TestModelsLocateInvertsFootprint(t *testing.T) {
	eachModel(t, func(t *testing.T, name string, d Dims, l *Layout) {
		slots := 2*d.PageSize + 1 // a last page partly owned
		if l.PoolBytes(slots) > 1<<22 {
			slots = d.PageSize
		}
		l, err := l.ForPool(slots)
		if err != nil {
			t.Fatal(err)
		}
		owned := make([]int32, l.PoolBytes(slots))
		for i := range owned {
			owned[i] = -1
		}
		recs := l.Encode(nil)
		// Locate every byte of a small pool, a sample of a large one.
		rng := rand.New(rand.NewPCG(uint64(d.Heads), uint64(d.PageSize)))
		check := func(int) bool { return true }
		if n := l.PoolBytes(slots); n > 1<<16 {
			check = func(int) bool { return rng.IntN(n) < 1<<16 }
		}
		for s := range int64(slots) {
			spans := l.Footprint(s)
			if len(spans) != l.NumPieces() {
				t.Fatalf("%d spans, %d pieces", len(spans), l.NumPieces())
			}
			for p, sp := range spans {
				if sp.Len != len(recs[p]) {
					t.Fatalf("slot %d piece %d: span of %d bytes, record of %d", s, p, sp.Len, len(recs[p]))
				}
				for o := sp.Off; o < sp.End(); o++ {
					if owned[o] != -1 {
						t.Fatalf("byte %d owned by slots %d and %d", o, owned[o], s)
					}
					owned[o] = int32(s)
					if !check(o) {
						continue
					}
					got, ok := l.Locate(o, slots)
					if !ok || got.Slot != s || got.Plane != p || got.Offset != o-sp.Off {
						t.Fatalf("Locate(%d) = %+v,%v; slot %d piece %d offset %d owns it", o, got, ok, s, p, o-sp.Off)
					}
				}
			}
		}
		free := 0
		for o, s := range owned {
			if s >= 0 {
				continue
			}
			free++
			if !check(o) {
				continue
			}
			if got, ok := l.Locate(o, slots); ok {
				t.Fatalf("Locate(%d) = %+v, but no slot's footprint holds it", o, got)
			}
		}
		if want := l.PoolBytes(slots) - slots*l.BytesPerToken(); free != want {
			t.Errorf("%d bytes owned by no slot; want %d (the unfilled page's)", free, want)
		}
		// UnitOffset: every unit of a few slots lands on a byte its slot
		// owns, in the field Locate names.
		for _, s := range []int64{0, int64(slots - 1), int64(d.PageSize / 2)} {
			for _, f := range l.Fields {
				n, ub, _ := l.Units(f.Name)
				for h := range l.NumHeads() {
					for u := 0; u < n; u += max(1, n/5) {
						off, err := l.UnitOffset(f.Name, s, h, u)
						if err != nil {
							t.Fatal(err)
						}
						if o, ok := l.Locate(off+ub-1, slots); !ok || o.Slot != s || o.Field != f.Name {
							t.Fatalf("%s slot %d head %d unit %d at %d: Locate says %+v,%v", f.Name, s, h, u, off, o, ok)
						}
					}
				}
			}
		}
	})
}

// TestModelsJSONRoundTrip: every model prints as a layout file that
// parses back to the same layout, answering the same footprints.
func TestModelsJSONRoundTrip(t *testing.T) {
	eachModel(t, func(t *testing.T, name string, d Dims, l *Layout) {
		back, err := Parse(l.JSON(), 0)
		if err != nil {
			t.Fatalf("%v\n%s", err, l.JSON())
		}
		if string(back.JSON()) != string(l.JSON()) {
			t.Fatalf("the JSON does not round-trip")
		}
		a, _ := l.ForPool(3 * d.PageSize)
		b, _ := back.ForPool(3 * d.PageSize)
		for s := int64(-1); s < int64(3*d.PageSize); s += int64(max(1, d.PageSize/3)) {
			if !reflect.DeepEqual(a.Footprint(s), b.Footprint(s)) {
				t.Fatalf("slot %d: footprints differ after parsing", s)
			}
		}
		if !reflect.DeepEqual(l.Resolved().JSON(), back.Resolved().JSON()) {
			t.Errorf("resolved recipes differ")
		}
	})
}

// TestTorchPlaceIsTorchStrides holds torchPlace to the strides torch
// gives a contiguous tensor, computed here the other way round (outer to
// inner, then read back by nested loops).
func TestTorchPlaceIsTorchStrides(t *testing.T) {
	// vLLM's paged K: (H, D/x, P, x) for one block; element (h, d) of
	// token t at ((h·D/x + d/x)·P + t)·x + d%x.
	const h, d, p, x = 3, 32, 5, 8
	pl := torchPlace("k", 0, 2, dim{CoordHead, h}, dim{CoordUnit, d / x}, dim{CoordSlot, p}, dim{CoordUnit, x})
	l := &Layout{Name: "t", HeadDim: d, PageSize: p, Heads: h, Regions: []Region{{Name: "k"}},
		Fields: []Field{{Name: "k", Kind: KindBF16, To: d, Place: pl}}}
	if err := l.compile(); err != nil {
		t.Fatal(err)
	}
	for hi := range h {
		for di := range d {
			for ti := range p {
				want := 2 * (((hi*(d/x)+di/x)*p+ti)*x + di%x)
				if got := l.fields["k"].place.at(ti, hi, di); got != want {
					t.Fatalf("(h %d, d %d, t %d) at %d, torch says %d", hi, di, ti, got, want)
				}
			}
		}
	}
}

// TestCompositeMap: a map over the slot and head flattened together (a
// block-scale matrix whose rows are slot·H + head, in the 128×4 tiles of
// vLLM's cvt_quant_to_fp4_get_sf_out_offset: row r at (r%32)·16 +
// ((r/32)%4)·4, column c at (c/4)·512 + c%4, 128-row tiles after) is data
// too: validated, located and footprinted like any other, for head
// counts that do not divide 32.
func TestCompositeMap(t *testing.T) {
	for _, heads := range []int{1, 3, 8} {
		const p, d = 64, 128 // 8 scale columns per row: 2 column tiles
		rows := p * heads
		tiles := (rows + 127) / 128
		l := &Layout{Name: "tiled", HeadDim: d, PageSize: p, Heads: heads, Regions: []Region{{Name: "sf"}},
			Fields: []Field{
				{Name: "x", Kind: KindE2M1, To: d, Group: 16, Static: PerTensor, Place: torchPlace("sf", tiles*1024, 1, nhd(Dims{heads, d, p}, d/2)...)},
				{Name: "sf", Kind: KindScaleE4M3, Of: "x", Place: &Place{Region: "sf", Maps: []Map{
					{Of: []Coord{CoordSlot, CoordHead}, Shape: []int{32, 4, tiles}, Stride: []int{16, 4, 1024}},
					{Of: []Coord{CoordUnit}, Shape: []int{4, 2}, Stride: []int{1, 512}},
				}}},
			}}
		if err := l.compile(); err != nil {
			t.Fatal(err)
		}
		for ti := range p {
			for h := range heads {
				for c := range d / 16 {
					r := ti*heads + h
					want := (r/128)*1024 + (c/4)*512 + (r%32)*16 + ((r/32)%4)*4 + c%4
					got, _ := l.UnitOffset("sf", int64(ti), h, c)
					if got != want {
						t.Fatalf("heads %d: slot %d head %d column %d at %d, want %d", heads, ti, h, c, got, want)
					}
				}
			}
		}
		slots := 2 * p
		seen := map[int]int64{}
		for s := range int64(slots) {
			for pi, sp := range l.Footprint(s) {
				for o := sp.Off; o < sp.End(); o++ {
					if prev, ok := seen[o]; ok {
						t.Fatalf("heads %d: byte %d owned by slots %d and %d", heads, o, prev, s)
					}
					seen[o] = s
					if got, ok := l.Locate(o, slots); !ok || got.Slot != s || got.Plane != pi {
						t.Fatalf("heads %d: Locate(%d) = %+v, %v; want slot %d piece %d", heads, o, got, ok, s, pi)
					}
				}
			}
		}
	}
}

// TestPlaceErrors: a bad placement is one line naming the field and what
// to fix.
func TestPlaceErrors(t *testing.T) {
	bf := func(name string, p *Place) Field { return Field{Name: name, Kind: KindBF16, To: 8, Place: p} }
	slotHeadUnit := func(off, ts, hs int) *Place {
		return &Place{Region: "r", Offset: off, Maps: []Map{
			{Of: []Coord{CoordSlot}, Shape: []int{4}, Stride: []int{ts}},
			{Of: []Coord{CoordHead}, Shape: []int{2}, Stride: []int{hs}},
			{Of: []Coord{CoordUnit}, Shape: []int{8}, Stride: []int{2}},
		}}
	}
	for _, tc := range []struct {
		name   string
		fields []Field
		region Region
		want   string
	}{
		{"overlap", []Field{bf("k", slotHeadUnit(0, 32, 16)), bf("v", slotHeadUnit(64, 32, 16))}, Region{Name: "r"},
			`field "v": byte 64 of a page of region "r" holds its unit (slot 0, head 0, unit 0) and field "k"'s unit (slot 2, head 0, unit 0)`},
		{"self overlap", []Field{bf("k", slotHeadUnit(0, 16, 16))}, Region{Name: "r"}, `field "k": byte 16 of a page of region "r" holds its unit`},
		{"outside", []Field{bf("k", slotHeadUnit(0, 32, 16))}, Region{Name: "r", PageBytes: 100}, `field "k" reaches byte 128 of a page of region "r", past its page_bytes 100`},
		{"misaligned", []Field{bf("k", slotHeadUnit(1, 32, 16))}, Region{Name: "r"}, `field "k": offset 1 is not a multiple of 2, a bf16 unit's alignment`},
		{"misaligned stride", []Field{bf("k", slotHeadUnit(0, 33, 16))}, Region{Name: "r"}, `field "k": stride 33 is not a multiple of 2`},
		{"no head map", []Field{bf("k", &Place{Region: "r", Maps: []Map{{Of: []Coord{CoordSlot}, Shape: []int{4}, Stride: []int{32}}, {Of: []Coord{CoordUnit}, Shape: []int{8}, Stride: []int{2}}}})},
			Region{Name: "r"}, `field "k": no mode maps the head (2 of them): add a mode with of ["head"]`},
		{"small shape", []Field{bf("k", &Place{Region: "r", Maps: []Map{{Of: []Coord{CoordSlot, CoordHead}, Shape: []int{4}, Stride: []int{32}}, {Of: []Coord{CoordUnit}, Shape: []int{8}, Stride: []int{2}}}})},
			Region{Name: "r"}, `field "k" mode 0: shape [4] covers 4 indices of [slot head]'s 8`},
		{"twice", []Field{bf("k", &Place{Region: "r", Maps: []Map{{Of: []Coord{CoordSlot, CoordHead}, Shape: []int{8}, Stride: []int{32}}, {Of: []Coord{CoordUnit, CoordHead}, Shape: []int{16}, Stride: []int{2}}}})},
			Region{Name: "r"}, `field "k" mode 1: the head is in two modes`},
		{"region", []Field{bf("k", &Place{Region: "q", Maps: slotHeadUnit(0, 32, 16).Maps})}, Region{Name: "r"}, `field "k": region "q"; want one of the layout's regions [r]`},
		{"coordinate", []Field{bf("k", &Place{Region: "r", Maps: []Map{{Of: []Coord{"page"}, Shape: []int{4}, Stride: []int{32}}}})}, Region{Name: "r"}, `coordinate "page"; want slot, head or unit`},
	} {
		l := &Layout{Name: "x", HeadDim: 8, PageSize: 4, Heads: 2, Regions: []Region{tc.region}, Fields: tc.fields}
		err := l.compile()
		if err == nil || !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), tc.want) || strings.Contains(err.Error(), "\n") {
			t.Errorf("%s: %v; want one line containing %s", tc.name, err, tc.want)
		}
	}
}

// TestVLLMSwizzleNeedsSixtyFour: vLLM's NVFP4 scale swizzle splits a
// head's D/16 scales in four columns of D/64; at D = 96 its integer
// division puts two blocks on one byte. Built that way, the layout is
// rejected naming the byte.
func TestVLLMSwizzleNeedsSixtyFour(t *testing.T) {
	if _, err := BuiltinDims("nvfp4-kv", Dims{Heads: 2, HeadDim: 96, PageSize: 16}); err == nil || !strings.Contains(err.Error(), "multiple of 64") {
		t.Errorf("D=96: %v", err)
	}
	// The kernel's own formula at D = 96 (s_group = 6/4 = 1):
	// row 4·(t/4) + s, column t%4 — composite in (slot, unit).
	const p, s = 8, 6
	l := &Layout{Name: "vllm-d96", HeadDim: 96, PageSize: p, Regions: []Region{{Name: "kv"}}, Fields: []Field{
		{Name: "k", Kind: KindE2M1, To: 96, Group: 16, Static: PerTensor, Place: torchPlace("kv", 0, 1, dim{CoordSlot, p}, dim{CoordUnit, 48})},
		{Name: "k_scale", Kind: KindScaleE4M3, Of: "k", Place: &Place{Region: "kv", Offset: p * 48, Maps: []Map{
			{Of: []Coord{CoordSlot}, Shape: []int{4, p / 4}, Stride: []int{1, 4 * s}},
			{Of: []Coord{CoordUnit}, Shape: []int{1, s}, Stride: []int{4, s}},
		}}},
	}}
	if err := l.compile(); err == nil || !strings.Contains(err.Error(), `field "k_scale": byte`) {
		t.Errorf("vLLM's D=96 swizzle: %v; want an overlap naming k_scale", err)
	}
}

// TestTodaysFileSchemaStaysValid: a layout file of the planes schema, as
// today's README shows it, parses to the same layout as before, and
// prints without any of the new keys.
func TestTodaysFileSchemaStaysValid(t *testing.T) {
	file := `{"name": "dsv4-main", "head_dim": 512, "page_align": 576,
	 "fields": [{"name": "nope", "kind": "e4m3", "from": 0, "to": 448, "group": 64,
	             "recipe": {"eps": 1e-8, "quantize": "reciprocal"}},
	            {"name": "rope", "kind": "bf16", "from": 448, "to": 512},
	            {"name": "scales", "kind": "scale-ue8m0", "of": "nope"},
	            {"name": "pad", "kind": "pad", "bytes": 1, "policy": "zero"}],
	 "planes": [["nope", "rope"], ["scales", "pad"]]}`
	l, err := Parse([]byte(file), 64)
	if err != nil {
		t.Fatal(err)
	}
	ref := mustBuiltin(t, "dsv4-main", 512, 64)
	if l.PageBytes() != ref.PageBytes() || !reflect.DeepEqual(l.Footprint(77), ref.Footprint(77)) {
		t.Errorf("the file's geometry differs from the built-in's")
	}
	for _, key := range []string{"heads", "tensors", "regions", "place", "static", "input", "reserved_slots"} {
		if strings.Contains(string(l.JSON()), `"`+key+`"`) {
			t.Errorf("a planes layout prints %q", key)
		}
	}
	if _, err := Parse([]byte(`{"name":"p","head_dim":8,"regions":[{"name":"r"}],"fields":[{"name":"k","kind":"bf16","to":8,"place":{"region":"r","maps":[{"of":["slot"],"shape":[4],"stride":[16]},{"of":["unit"],"shape":[8],"stride":[2]}]}}]}`), 4); err == nil ||
		!strings.Contains(err.Error(), "state page_size") {
		t.Errorf("a placed layout without its page size: %v", err)
	}
}

// TestForPool: a layout of several regions binds to its pool; K-before-V
// puts V's page 0 after every K page, whatever the pool's size.
func TestForPool(t *testing.T) {
	l, err := BuiltinDims("vllm-flash", Dims{Heads: 2, HeadDim: 64, PageSize: 16})
	if err != nil {
		t.Fatal(err)
	}
	for _, slots := range []int{16, 100, 1 << 20} {
		b, err := l.ForPool(slots)
		if err != nil {
			t.Fatal(err)
		}
		kPage := 16 * 2 * 64 * 2
		if got := b.Footprint(0)[1].Off; got != b.Pages(slots)*kPage {
			t.Errorf("%d slots: V of slot 0 at %d, want after %d K pages (%d)", slots, got, b.Pages(slots), b.Pages(slots)*kPage)
		}
	}
	defer func() {
		if r := recover(); r == nil || !strings.Contains(fmt.Sprint(r), "ForPool") {
			t.Errorf("an unbound two-region footprint: %v", r)
		}
	}()
	l.Footprint(0)
}

// TestInvertAgainstSearch: the mixed-radix inverse of a random nested
// place finds the unit a search over every unit finds.
func TestInvertAgainstSearch(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 9))
	for range 50 {
		d := Dims{Heads: 1 + rng.IntN(4), HeadDim: 8 * (1 + rng.IntN(4)), PageSize: 1 + rng.IntN(8)}
		dims := []dim{{CoordSlot, d.PageSize}, {CoordHead, d.Heads}, {CoordUnit, d.HeadDim}}
		rng.Shuffle(len(dims), func(i, j int) { dims[i], dims[j] = dims[j], dims[i] })
		pl := torchPlace("r", 2*rng.IntN(5), 2, dims...)
		l := &Layout{Name: "r", HeadDim: d.HeadDim, PageSize: d.PageSize, Heads: d.Heads, Regions: []Region{{Name: "r", Align: 64}},
			Fields: []Field{{Name: "k", Kind: KindBF16, To: d.HeadDim, Place: pl}}}
		if err := l.compile(); err != nil {
			t.Fatal(err)
		}
		f := l.fields["k"]
		for r := range l.regions[0].pageBytes {
			c, w, ok := l.invert(f, r)
			found := false
			for ti := range d.PageSize {
				for h := range d.Heads {
					for u := range d.HeadDim {
						if o := f.place.at(ti, h, u); r >= o && r < o+2 {
							found = true
							if !ok || c != [3]int{ti, h, u} || w != r-o {
								t.Fatalf("%v: byte %d: invert says %v+%d,%v; unit (%d,%d,%d)", pl, r, c, w, ok, ti, h, u)
							}
						}
					}
				}
			}
			if !found && ok {
				t.Fatalf("%v: byte %d: invert says %v, no unit holds it", pl, r, c)
			}
		}
	}
}

// TestPlanesBesideRegions: a layout of planes may place more fields in
// regions after the planes' (an fp8 indexer page and a bf16 V buffer):
// footprints, owners and encodings agree across both.
func TestPlanesBesideRegions(t *testing.T) {
	l := &Layout{Name: "mixed", HeadDim: 16, PageSize: 4, Tensors: []string{"k", "v"}, Regions: []Region{{Name: "v"}},
		Fields: []Field{
			{Name: "value", Kind: KindE4M3, Tensor: "k", To: 16, Group: 16},
			{Name: "scale", Kind: KindScaleF32, Of: "value"},
			{Name: "v", Kind: KindBF16, Tensor: "v", To: 16, Place: torchPlace("v", 0, 2, dim{CoordSlot, 4}, dim{CoordUnit, 16})},
		},
		Planes: [][]string{{"value"}, {"scale"}}}
	if err := l.compile(); err != nil {
		t.Fatal(err)
	}
	slots := 10
	b, err := l.ForPool(slots)
	if err != nil {
		t.Fatal(err)
	}
	if b.PageBytes() != 4*20+4*32 || b.NumPieces() != 3 {
		t.Fatalf("%d B/page, %d pieces", b.PageBytes(), b.NumPieces())
	}
	for s := range int64(slots) {
		for p, sp := range b.Footprint(s) {
			for o := sp.Off; o < sp.End(); o++ {
				if got, ok := b.Locate(o, slots); !ok || got.Slot != s || got.Plane != p || got.Offset != o-sp.Off {
					t.Fatalf("Locate(%d) = %+v, %v; slot %d piece %d", o, got, ok, s, p)
				}
			}
		}
	}
	if want := 3*80 + 128 + 32; b.Footprint(5)[2].Off != want { // 3 pages of planes, then V's page 1, token 1
		t.Errorf("V of slot 5 at %d, want %d", b.Footprint(5)[2].Off, want)
	}
	row := randomRow(rand.New(rand.NewPCG(2, 2)), 32, 1)
	if fs := b.Judge(row, b.Encode(row), Exact); len(fs) > 0 {
		t.Error(Summary(fs))
	}
}
