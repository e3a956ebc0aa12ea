package layout

import (
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
)

// everyFloatPattern calls f on float32s of every sign, exponent and top
// 16 mantissa bits, with low bits on, beside and between boundaries.
func everyFloatPattern(f func(u uint32)) {
	for hi := uint32(0); hi < 1<<16; hi++ {
		for _, lo := range []uint32{0, 1, 0x5a5a, 0x7fff, 0x8000, 0x8001, 0xffff} {
			f(hi<<16 | lo)
		}
	}
}

func TestE5M2Table(t *testing.T) {
	for c, want := range map[byte]float64{0x00: 0, 0x01: 0x1p-16, 0x04: 0x1p-14, 0x3c: 1, 0x3d: 1.25, 0x7b: 57344, 0xbc: -1, 0x7c: math.Inf(1), 0xfc: math.Inf(-1)} {
		if got := float64(DecodeE5M2(c)); got != want {
			t.Errorf("e5m2 %#02x = %v, want %v", c, got, want)
		}
	}
	for _, c := range []byte{0x7d, 0x7e, 0x7f, 0xfd, 0xff} {
		if v := DecodeE5M2(c); v == v {
			t.Errorf("e5m2 %#02x = %v, want NaN", c, v)
		}
	}
}

// TestE5M2AgainstSearch holds the bit-level e5m2 encoders to the nearest
// code by search, ties to even, saturating (or, unsaturated, infinity
// from 61440 on, the tie going to the even infinity).
func TestE5M2AgainstSearch(t *testing.T) {
	everyFloatPattern(func(u uint32) {
		x := math.Float32frombits(u)
		want := fp8BySearch(KindE5M2, x)
		if got := EncodeE5M2(x); got != want {
			t.Fatalf("EncodeE5M2(%v = %#08x) = %#02x, search says %#02x", x, u, got, want)
		}
		if a := math.Abs(float64(x)); a >= e5m2Overflow && a == a {
			want = 0x7c | byte(u>>24)&0x80
		}
		if got := encodeE5M2Unsaturated(x); got != want {
			t.Fatalf("unsaturated e5m2(%v) = %#02x, want %#02x", x, got, want)
		}
	})
}

// TestE2M1AgainstSearch holds EncodeE2M1's comparisons to the nearest of
// its eight magnitudes by search, ties to even, saturating at 6.
func TestE2M1AgainstSearch(t *testing.T) {
	everyFloatPattern(func(u uint32) {
		x := math.Float32frombits(u)
		want := byte(0)
		if x == x {
			want = nearestCode(e2m1Val, 7, 8, float64(x))
		}
		if got := EncodeE2M1(x); got != want {
			t.Fatalf("EncodeE2M1(%v) = %#x, search says %#x", x, got, want)
		}
	})
	for _, tc := range []struct {
		x    float32
		want byte
	}{{0.25, 0}, {0.75, 2}, {1.25, 2}, {1.75, 4}, {2.5, 4}, {3.5, 6}, {5, 6}, {5.0001, 7}, {-0.75, 0xa}, {100, 7}} {
		if got := EncodeE2M1(tc.x); got != tc.want {
			t.Errorf("EncodeE2M1(%v) = %#x, want %#x", tc.x, got, tc.want)
		}
	}
}

// TestFP16 holds the half conversions to the format's definition: every
// half decodes to the value its fields say and encodes back; floats round
// to the nearest half by search over every finite half, ties to even.
func TestFP16(t *testing.T) {
	var vals []float64
	for h := range uint32(1 << 16) {
		v := FP16ToFloat32(uint16(h))
		exp, man := h>>10&0x1f, h&0x3ff
		want := math.Ldexp(float64(man), -24)
		if exp != 0 {
			want = math.Ldexp(1+float64(man)/1024, int(exp)-15)
		}
		if exp == 0x1f {
			want = math.Inf(1)
			if man != 0 {
				want = math.NaN()
			}
		}
		if h&0x8000 != 0 {
			want = -want
		}
		if float64(v) != want && !(v != v && want != want) {
			t.Fatalf("fp16 %#04x = %v, want %v", h, v, want)
		}
		if v == v && Float32ToFP16(v) != uint16(h) {
			t.Fatalf("fp16 %#04x does not round-trip", h)
		}
		if h < 0x7c00 {
			vals = append(vals, want)
		}
	}
	rng := rand.New(rand.NewPCG(1, 2))
	for range 200000 {
		x := float32(rng.NormFloat64() * math.Ldexp(1, rng.IntN(40)-24))
		a := math.Abs(float64(x))
		if a >= 65520 {
			continue
		}
		i, _ := slices.BinarySearch(vals, a)
		lo := max(i-1, 0)
		best := lo
		for j := lo; j <= min(i+1, len(vals)-1); j++ {
			if d, bd := math.Abs(vals[j]-a), math.Abs(vals[best]-a); d < bd || d == bd && j%2 == 0 {
				best = j
			}
		}
		want := uint16(best)
		if math.Signbit(float64(x)) {
			want |= 0x8000
		}
		if got := Float32ToFP16(x); got != want {
			t.Fatalf("Float32ToFP16(%v) = %#04x, search says %#04x", x, got, want)
		}
	}
}

// staticRows are rows of a layout's input for the judgement tests.
func staticRows(l *Layout, n int, seed uint64) [][]uint16 {
	return engineRows(n, l.RowElems(), seed)
}

// TestStaticScaleJudgement: a static-scale fp8 cache passes the
// reference and the other arithmetic (x·(1/s) for x/s), in both
// directions, under the scales the caller passed; a wrong rule fails
// naming the field with decoded values.
func TestStaticScaleJudgement(t *testing.T) {
	l, err := BuiltinDims("vllm-flash-fp8", Dims{Heads: 4, HeadDim: 64, PageSize: 16})
	if err != nil {
		t.Fatal(err)
	}
	in := Inputs{Scales: map[string][]float32{"k": {0.0173}, "v": {3.7}}}
	if err := l.CheckInputs(in); err != nil {
		t.Fatal(err)
	}
	recip, err := l.WithRecipe(&Recipe{Quantize: Reciprocal})
	if err != nil {
		t.Fatal(err)
	}
	for i, row := range staticRows(l, 60, 4) {
		for _, m := range []Mode{ByRecipe, Exact} {
			if fs := l.JudgeWith(row, in, l.EncodeWith(row, in), m); len(fs) > 0 {
				t.Fatalf("row %d mode %v: the reference fails: %s", i, m, Summary(fs))
			}
		}
		if fs := l.JudgeWith(row, in, recip.EncodeWith(row, in), ByRecipe); len(fs) > 0 {
			t.Fatalf("row %d: x·(1/s) fails a layout of x/s: %s", i, Summary(fs))
		}
		if fs := recip.JudgeWith(row, in, l.EncodeWith(row, in), ByRecipe); len(fs) > 0 {
			t.Fatalf("row %d: x/s fails a layout of x·(1/s): %s", i, Summary(fs))
		}
	}
	// The scale the caller passed, not 1: a kernel that ignores it fails.
	row := staticRows(l, 3, 5)[2]
	fs := l.JudgeWith(row, in, l.Encode(row), ByRecipe)
	if len(fs) == 0 || fs[0].Field != "k" || fs[0].Rule != RuleCode || !fs[0].Codes.Static {
		t.Fatalf("codes of scale 1 under k_scale 0.0173: %s", Summary(fs))
	}
	if s := fs[0].String(); !strings.Contains(s, "kernel's scale input") || !strings.Contains(s, "head ") || !strings.Contains(s, "holds 0x") {
		t.Errorf("finding %q: want the head, the hex and the rule", s)
	}
	if err := l.CheckInputs(Inputs{Scales: map[string][]float32{"k": {1, 2}}}); err == nil || !strings.Contains(err.Error(), `tensor "k" has 2 static scales; want 1 (one per tensor)`) {
		t.Errorf("two scales for a per-tensor field: %v", err)
	}
	if err := l.CheckInputs(Inputs{Scales: map[string][]float32{"q": {1}}}); err == nil || !strings.Contains(err.Error(), `tensor "q"`) {
		t.Errorf("a scale for no tensor: %v", err)
	}
	if err := l.CheckInputs(Inputs{Scales: map[string][]float32{"v": {float32(math.NaN())}}}); err == nil {
		t.Errorf("a NaN scale passes")
	}
}

// TestPerHeadScales: a per-head static scale divides each head by its own.
func TestPerHeadScales(t *testing.T) {
	l := &Layout{Name: "per-head", HeadDim: 16, PageSize: 2, Heads: 3, Tensors: []string{"k"}, Regions: []Region{{Name: "k"}},
		Fields: []Field{{Name: "k", Kind: KindE4M3, Tensor: "k", To: 16, Static: PerHead, Place: torchPlace("k", 0, 1, nhd(Dims{3, 16, 2}, 16)...)}}}
	if err := l.compile(); err != nil {
		t.Fatal(err)
	}
	in := Inputs{Scales: map[string][]float32{"k": {0.5, 2, 8}}}
	if err := l.CheckInputs(in); err != nil {
		t.Fatal(err)
	}
	row := make([]uint16, 48)
	for i := range row {
		row[i] = Float32ToBF16(3)
	}
	rec := l.EncodeWith(row, in)[0]
	for h, want := range []float32{6, 1.5, 0.375} {
		if got := DecodeE4M3(rec[h*16]); got != want {
			t.Errorf("head %d: 3 / scale encodes %v, want %v", h, got, want)
		}
	}
	one := Inputs{Scales: map[string][]float32{"k": {2}}} // one for every head
	if fs := l.JudgeWith(row, one, l.EncodeWith(row, one), Exact); len(fs) > 0 {
		t.Errorf("one scale for all heads: %s", Summary(fs))
	}
}

// vllmNVFP4Codes is vLLM's NVFP4 arithmetic with its approximate
// reciprocals modelled as one ulp off: SFValue = global·(amax·rcp(6)),
// outScale = rcp(SF·rcp(global)). dir picks the ulps' direction.
func vllmNVFP4Codes(x []uint16, gs float32, dir int) (byte, []byte) {
	rcp := func(a float32) float32 { return stepULPsSigned(1/a, dir) }
	amax := Amax(x)
	sf := EncodeE4M3(gs * (amax * rcp(6)))
	sd := DecodeE4M3(sf)
	var out float32
	if sd != 0 {
		out = rcp(sd * rcp(gs))
	}
	codes := make([]byte, len(x)/2)
	for i := 0; i < len(x); i += 2 {
		codes[i/2] = EncodeE2M1(BF16ToFloat32(x[i+1])*out)<<4 | EncodeE2M1(BF16ToFloat32(x[i])*out)
	}
	return sf, codes
}

// stepULPsSigned moves a positive float n ulps either way.
func stepULPsSigned(f float32, n int) float32 {
	return math.Float32frombits(uint32(int64(math.Float32bits(f)) + int64(n)))
}

// nvfp4Write writes a kernel's block scales and codes into a slot's
// records through the layout's unit offsets.
func nvfp4Write(t *testing.T, l *Layout, row []uint16, in Inputs, kernel func(x []uint16, gs float32) (byte, []byte)) [][]byte {
	t.Helper()
	recs := l.EncodeWith(row, in)
	img := l.Image(recs)
	for _, tn := range []string{"k", "v"} {
		gs := nvfp4Global(in.scale(l, l.fields[tn], 0))
		data, _ := l.FieldImage(tn)
		scales, _ := l.FieldImage(tn + "_scale")
		ti := slices.Index(l.TensorNames(), tn)
		blocks := l.HeadDim / 16
		for h := range l.NumHeads() {
			for g := range blocks {
				at := (ti*l.NumHeads()+h)*l.HeadDim + g*16
				sf, codes := kernel(row[at:at+16], gs)
				img[scales.Off+h*blocks+g] = sf
				copy(img[data.Off+(h*l.HeadDim+g*16)/2:], codes)
			}
		}
	}
	return l.cut(img)
}

// TestNVFP4Judgement: vLLM's arithmetic (approximate reciprocals either
// way) passes, the reference passes in both modes; rounding toward zero,
// a block scale one code off and swapped nibbles fail, naming the field,
// with decoded values beside the hex.
func TestNVFP4Judgement(t *testing.T) {
	l, err := BuiltinDims("nvfp4-kv", Dims{Heads: 2, HeadDim: 64, PageSize: 8})
	if err != nil {
		t.Fatal(err)
	}
	in := Inputs{Scales: map[string][]float32{"k": {0.0131}, "v": {1.0 / 448 / 6}}}
	rows := staticRows(l, 80, 7)
	for i, row := range rows {
		for _, m := range []Mode{ByRecipe, Exact} {
			if fs := l.JudgeWith(row, in, l.EncodeWith(row, in), m); len(fs) > 0 {
				t.Fatalf("row %d mode %v: the reference fails: %s", i, m, Summary(fs))
			}
		}
		for _, dir := range []int{-1, 1} {
			got := nvfp4Write(t, l, row, in, func(x []uint16, gs float32) (byte, []byte) { return vllmNVFP4Codes(x, gs, dir) })
			if fs := l.JudgeWith(row, in, got, ByRecipe); len(fs) > 0 {
				t.Fatalf("row %d: vLLM's approximate arithmetic (%+d ulp) fails: %s", i, dir, Summary(fs))
			}
		}
	}
	// Wrong rules.
	rtz := func(x []uint16, gs float32) (byte, []byte) {
		sf, sd := nvfp4BlockScale(Amax(x), gs)
		codes := make([]byte, len(x)/2)
		for i := 0; i < len(x); i += 2 {
			c := func(v float32) byte { // toward zero
				y := v * gs / sd
				if sd == 0 {
					return 0
				}
				for m := byte(7); ; m-- {
					if float32(e2m1Table[m]) <= float32(math.Abs(float64(y))) || m == 0 {
						if y < 0 {
							return m | 8
						}
						return m
					}
				}
			}
			codes[i/2] = c(BF16ToFloat32(x[i+1]))<<4 | c(BF16ToFloat32(x[i]))
		}
		return sf, codes
	}
	scaleOff := func(x []uint16, gs float32) (byte, []byte) {
		sf, codes := vllmNVFP4Codes(x, gs, 0)
		return sf + 1, codes
	}
	swapped := func(x []uint16, gs float32) (byte, []byte) {
		sf, codes := vllmNVFP4Codes(x, gs, 0)
		for i, c := range codes {
			codes[i] = c<<4 | c>>4
		}
		return sf, codes
	}
	for _, tc := range []struct {
		name   string
		kernel func([]uint16, float32) (byte, []byte)
		field  string
		rule   Rule
		text   string
	}{
		{"round toward zero", rtz, "k", RuleCode, "e2m1 codes are not the rounding of x/s"},
		{"block scale one code up", scaleOff, "k_scale", RuleScale, "stored block scale"},
		{"nibbles swapped", swapped, "k", RuleCode, "e2m1 codes"},
	} {
		caught := 0
		for _, row := range rows {
			fs := l.JudgeWith(row, in, nvfp4Write(t, l, row, in, tc.kernel), ByRecipe)
			if len(fs) == 0 {
				continue
			}
			caught++
			if f := fs[0]; f.Field != tc.field || f.Rule != tc.rule || !strings.Contains(f.String(), tc.text) || !strings.Contains(f.String(), "(") {
				t.Fatalf("%s: first finding %s; want the %s rule on %s", tc.name, f, tc.rule, tc.field)
			}
		}
		if caught < len(rows)/2 {
			t.Errorf("%s: caught on %d of %d rows", tc.name, caught, len(rows))
		}
	}
}

// TestMXFP8Judgement: SGLang's MXFP8 arithmetic passes; the OCP floor
// rule (floor(log2 amax) - 8, a scale up to twice too small) is another
// rule and fails naming the scale field; a 0xFF (NaN) scale byte and NaN
// codes for finite inputs fail naming their fields.
func TestMXFP8Judgement(t *testing.T) {
	l, err := BuiltinDims("mxfp8-kv", Dims{Heads: 2, HeadDim: 64, PageSize: 32})
	if err != nil {
		t.Fatal(err)
	}
	rows := staticRows(l, 200, 8)
	kImg, _ := l.FieldImage("k")
	sImg, _ := l.FieldImage("k_scale")
	ocp, differ := 0, 0
	for i, row := range rows {
		recs := l.Encode(row)
		for _, m := range []Mode{ByRecipe, Exact} {
			if fs := l.Judge(row, recs, m); len(fs) > 0 {
				t.Fatalf("row %d: the reference fails: %s", i, Summary(fs))
			}
		}
		// OCP: shared exponent floor(log2(amax)) - 8, codes x/2^e clamped.
		img := l.Image(recs)
		x := row[:32]
		amax := float64(Amax(x))
		if amax == 0 || math.IsInf(amax, 0) {
			continue
		}
		e := int(math.Floor(math.Log2(amax))) - 8
		if byte(e+127) != img[sImg.Off] {
			differ++ // the rules part where amax's mantissa is 1.75 or more
		}
		img[sImg.Off] = byte(e + 127)
		for k, xv := range x {
			img[kImg.Off+k] = EncodeE4M3(BF16ToFloat32(xv) / float32(math.Ldexp(1, e)))
		}
		if fs := l.Judge(row, l.cut(img), ByRecipe); len(fs) > 0 {
			ocp++
			if fs[0].Field != "k_scale" || fs[0].Rule != RuleScale {
				t.Fatalf("OCP rule: %s", Summary(fs))
			}
		}
	}
	if ocp != differ || differ < 10 {
		t.Errorf("the OCP floor rule caught on %d rows, its scale differs on %d", ocp, differ)
	}
	row := rows[2]
	img := l.Image(l.Encode(row))
	img[sImg.Off+1] = 0xff
	fs := l.Judge(row, l.cut(img), ByRecipe)
	if len(fs) == 0 || fs[0].Field != "k_scale" || !strings.Contains(fs[0].String(), "NaN") {
		t.Errorf("a 0xFF scale: %s", Summary(fs))
	}
	img = l.Image(l.Encode(row))
	img[kImg.Off+5] = 0x7f
	fs = l.Judge(row, l.cut(img), ByRecipe)
	if len(fs) == 0 || fs[0].Field != "k" || fs[0].Rule != RuleCode || !strings.Contains(fs[0].String(), "holds 0x7f (NaN)") {
		t.Errorf("a NaN code for a finite element: %s", Summary(fs))
	}
}

// TestE5M2WhereE4M3Declared: e5m2 codes stored into an e4m3 cache fail
// the e4m3 layout naming the field, on every row that is not all zero.
func TestE5M2WhereE4M3Declared(t *testing.T) {
	d := Dims{Heads: 2, HeadDim: 64, PageSize: 16}
	e4, _ := BuiltinDims("vllm-flash-fp8", d)
	e5, _ := BuiltinDims("vllm-flash-e5m2", d)
	in := Inputs{Scales: map[string][]float32{"k": {0.5}, "v": {0.25}}}
	for i, row := range staticRows(e4, 30, 9) {
		if i%7 < 2 {
			continue // a zero or tiny row's codes are zero in both formats
		}
		fs := e4.JudgeWith(row, in, e5.EncodeWith(row, in), ByRecipe)
		if len(fs) == 0 || fs[0].Field != "k" || fs[0].Rule != RuleCode {
			t.Fatalf("row %d: e5m2 bytes in an e4m3 cache: %s", i, Summary(fs))
		}
		if fs := e5.JudgeWith(row, in, e5.EncodeWith(row, in), Exact); len(fs) > 0 {
			t.Fatalf("row %d: the e5m2 reference fails: %s", i, Summary(fs))
		}
	}
}

// TestFP16Field: an fp16 cache from an fp16 input is judged bit for bit.
func TestFP16Field(t *testing.T) {
	l := &Layout{Name: "fp16", HeadDim: 8, PageSize: 4, Input: "fp16", Fields: []Field{{Name: "v", Kind: KindFP16, To: 8}}, Planes: [][]string{{"v"}}}
	if err := l.compile(); err != nil {
		t.Fatal(err)
	}
	row := []uint16{0x3c00, 0xbc00, 0x7bff, 0x0001, 0, 0x8000, 0x3555, 0x4000}
	recs := l.Encode(row)
	if fs := l.Judge(row, recs, ByRecipe); len(fs) > 0 {
		t.Fatal(Summary(fs))
	}
	recs[0][2] ^= 1
	fs := l.Judge(row, recs, ByRecipe)
	if len(fs) != 1 || fs[0].Rule != RuleFP16 || !strings.Contains(fs[0].String(), "fp16 elements differ") || !strings.Contains(fs[0].String(), "want 0xbc00 (-1)") {
		t.Errorf("%s", Summary(fs))
	}
	bad := &Layout{Name: "fp16", HeadDim: 8, PageSize: 4, Fields: []Field{{Name: "v", Kind: KindFP16, To: 8}}, Planes: [][]string{{"v"}}}
	if err := bad.compile(); err == nil || !strings.Contains(err.Error(), `declare "input": "fp16"`) {
		t.Errorf("fp16 from bf16: %v", err)
	}
}
