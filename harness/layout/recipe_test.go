package layout

import (
	"encoding/binary"
	"errors"
	"math"
	"math/rand/v2"
	"strings"
	"testing"
)

const recipeLayout = `{"name":"x","head_dim":32,"fields":[
 {"name":"v","kind":"e4m3","to":32,"group":16%s},
 {"name":"s","kind":"%s","of":"v"},
 {"name":"p","kind":"pad","bytes":2%s}],
 "planes":[["v","s","p"]]}`

func parseRecipe(t *testing.T, recipe, scaleKind, policy string) (*Layout, error) {
	t.Helper()
	if recipe != "" {
		recipe = `,"recipe":` + recipe
	}
	if policy != "" {
		policy = `,"policy":` + policy
	}
	return Parse([]byte(sprintf(recipeLayout, recipe, scaleKind, policy)), 4)
}

func sprintf(format string, args ...any) string {
	r := strings.NewReplacer("%s", "\x00")
	parts := strings.Split(r.Replace(format), "\x00")
	var b strings.Builder
	for i, p := range parts {
		b.WriteString(p)
		if i < len(args) {
			b.WriteString(args[i].(string))
		}
	}
	return b.String()
}

func TestRecipeFromJSON(t *testing.T) {
	l, err := parseRecipe(t, `{"eps":1e-8,"quantize":"reciprocal","scale_ulps":2,"saturate":false}`, "scale-f32", `"zero"`)
	if err != nil {
		t.Fatal(err)
	}
	q, ok := l.Quant("v")
	want := Quant{Store: KindScaleF32, Eps: 1e-8, Reciprocal: true, Saturate: false, ScaleULPs: 2}
	if !ok || q != want {
		t.Errorf("quant %+v, want %+v", q, want)
	}
	if len(l.DontCare(0)) != 0 {
		t.Errorf("a zero pad policy leaves don't-care bytes: %v", l.DontCare(0))
	}
	back, err := Parse(l.JSON(), 0)
	if err != nil {
		t.Fatal(err)
	}
	if q2, _ := back.Quant("v"); q2 != q {
		t.Errorf("round trip: %+v, want %+v", q2, q)
	}
	// Eps 0 is no floor, and survives the round trip (it is not "unset").
	l, err = parseRecipe(t, `{"eps":0}`, "scale-ue8m0", "")
	if err != nil {
		t.Fatal(err)
	}
	back, _ = Parse(l.JSON(), 0)
	if q, _ := back.Quant("v"); q.Eps != 0 || !q.Pow2 || q.Store != KindScaleUE8M0 || !q.Saturate || q.ScaleULPs != 1 {
		t.Errorf("eps 0 on ue8m0: %+v", q)
	}
	if got := back.DontCare(0); len(got) != 1 || got[0] != (Span{34, 2}) {
		t.Errorf("default pad policy: don't-care %v, want [{34 2}] (32 codes, 2 exponents)", got)
	}
}

// TestRecipeValidation: every value out of bounds is an error naming the
// field it came from.
func TestRecipeValidation(t *testing.T) {
	for _, tc := range []struct {
		recipe, scale, policy, want string
	}{
		{`{"eps":-1}`, "scale-f32", "", "recipe eps -1"},
		{`{"eps":2}`, "scale-f32", "", "recipe eps 2"},
		{`{"scale_ulps":17}`, "scale-f32", "", "recipe scale_ulps 17"},
		{`{"scale_ulps":-1}`, "scale-f32", "", "recipe scale_ulps -1"},
		{`{"quantize":"mul"}`, "scale-f32", "", `recipe quantize "mul"`},
		{`{"rounding":"toward-zero"}`, "scale-f32", "", `recipe rounding "toward-zero"`},
		{`{"scale":"fp16"}`, "scale-f32", "", `recipe scale "fp16"`},
		{`{"scale":"f32"}`, "scale-ue8m0", "", `holds powers of two only`},
		{`{"epsilon":1}`, "scale-f32", "", `unknown field "epsilon"`},
		{``, "scale-f32", `"ones"`, `pad policy "ones"`},
	} {
		_, err := parseRecipe(t, tc.recipe, tc.scale, tc.policy)
		if err == nil || !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s %s %s: err = %v, want ErrInvalid naming %q", tc.recipe, tc.scale, tc.policy, err, tc.want)
		}
	}
	for _, js := range []string{
		`{"name":"x","head_dim":16,"fields":[{"name":"v","kind":"bf16","to":16,"recipe":{}}],"planes":[["v"]]}`,
		`{"name":"x","head_dim":16,"fields":[{"name":"v","kind":"bf16","to":16,"policy":"zero"}],"planes":[["v"]]}`,
	} {
		if _, err := Parse([]byte(js), 4); err == nil || !strings.Contains(err.Error(), "belongs on") {
			t.Errorf("%s: err = %v", js, err)
		}
	}
}

func TestRecipeString(t *testing.T) {
	for r, want := range map[*Recipe]string{
		{}: "scale from the scale field, eps 1e-4, x/s, nearest-even, saturating, scale ±1 ulp",
		{Scale: ScaleUE8M0, Eps: new(1e-8), Quantize: Reciprocal, ScaleULPs: new(2)}: "scale ue8m0, eps 1e-8, x*(1/s), nearest-even, saturating, scale ±2 ulp",
		{Eps: new(0.0), Saturate: new(false)}:                                        "scale from the scale field, eps 0, x/s, nearest-even, not saturating, scale ±1 ulp",
	} {
		if got := r.String(); got != want {
			t.Errorf("%+v: %q, want %q", *r, got, want)
		}
	}
}

// TestWithRecipe: a plugin's declaration replaces the recipe of every
// e4m3 field, checked against the layout's scale fields.
func TestWithRecipe(t *testing.T) {
	l := mustBuiltin(t, "dsv4-main", 512, 64)
	d, err := l.WithRecipe(&Recipe{Eps: new(1e-8), Quantize: Reciprocal})
	if err != nil {
		t.Fatal(err)
	}
	if q, _ := d.Quant("nope"); q.Eps != 1e-8 || !q.Reciprocal || !q.Pow2 {
		t.Errorf("declared: %+v", q)
	}
	if q, _ := l.Quant("nope"); q.Eps != DefaultEps {
		t.Errorf("the original layout changed: %+v", q)
	}
	if d.PageBytes() != l.PageBytes() || d.BytesPerToken() != l.BytesPerToken() {
		t.Error("a recipe changed the geometry")
	}
	if _, err := l.WithRecipe(&Recipe{Scale: ScaleF32}); err == nil || !strings.Contains(err.Error(), `field "nope"`) {
		t.Errorf("f32 rule on dsv4-main's ue8m0 scales: %v", err)
	}
	if same, _ := l.WithRecipe(nil); same != l {
		t.Error("a nil recipe is not the layout itself")
	}
}

// TestJudgeEncodePasses: the reference encoding passes its own layout in
// both modes, for every built-in layout, several recipes and every row
// kind the generator draws (garbage included: NaN and Inf elements).
func TestJudgeEncodePasses(t *testing.T) {
	recipes := []*Recipe{nil, {Eps: new(1e-8), Quantize: Reciprocal}, {Eps: new(0.0)}, {Saturate: new(false), ScaleULPs: new(0)}}
	rng := rand.New(rand.NewPCG(5, 6))
	for _, name := range Names() {
		base := mustBuiltin(t, name, 0, 4)
		for _, r := range recipes {
			l, err := base.WithRecipe(r)
			if err != nil {
				t.Fatal(err)
			}
			for i := range 40 {
				row := randomRow(rng, l.HeadDim, i%5)
				for _, m := range []Mode{ByRecipe, Exact} {
					if fs := l.Judge(row, l.Encode(row), m); len(fs) > 0 {
						t.Fatalf("%s %v mode %v row kind %d: the reference fails: %s", name, r, m, i%5, Summary(fs))
					}
				}
			}
		}
	}
}

// randomRow draws a row of one of five kinds: zero, normal, tiny, outlier,
// garbage bits.
func randomRow(rng *rand.Rand, d, kind int) []uint16 {
	row := make([]uint16, d)
	scale := math.Ldexp(1, rng.IntN(24)-12)
	for i := range row {
		switch kind {
		case 1:
			row[i] = Float32ToBF16(float32(rng.NormFloat64() * scale))
		case 2:
			row[i] = Float32ToBF16(float32((rng.Float64()*2 - 1) * 9e-5))
		case 3:
			row[i] = Float32ToBF16(float32(rng.NormFloat64() * 1e-2))
		case 4:
			row[i] = uint16(rng.Uint32())
		}
	}
	if kind == 3 {
		row[rng.IntN(d)] = Float32ToBF16(1e4)
	}
	return row
}

// TestJudgePadPolicy: DeepSeek-V4's pad byte is don't-care by default, and
// a layout that requires zero gets a pad finding naming the byte.
func TestJudgePadPolicy(t *testing.T) {
	l := mustBuiltin(t, "dsv4-main", 512, 64)
	row := randomRow(rand.New(rand.NewPCG(1, 1)), 512, 1)
	recs := l.Encode(row)
	recs[1][7] = 0xab // the kernel never wrote it
	if fs := l.Judge(row, recs, ByRecipe); len(fs) > 0 {
		t.Fatalf("untouched pad byte: %s", Summary(fs))
	}
	if fs := l.Judge(row, recs, Exact); len(fs) > 0 {
		t.Fatalf("untouched pad byte, exact: %s", Summary(fs))
	}
	if !l.Cares(1, 6) || l.Cares(1, 7) || len(l.DontCare(0)) != 0 {
		t.Errorf("cares: scale byte %v, pad byte %v, plane 0 don't-care %v", l.Cares(1, 6), l.Cares(1, 7), l.DontCare(0))
	}
	z := zeroPad(t, l)
	fs := z.Judge(row, recs, ByRecipe)
	if len(fs) != 1 || fs[0].Rule != RulePad || fs[0].Plane != 1 || len(fs[0].Bytes) != 1 || fs[0].Bytes[0] != 7 {
		t.Fatalf("zero policy: %+v", fs)
	}
	if !strings.Contains(fs[0].String(), "pad rule, pad: 1 pad bytes are not zero") {
		t.Errorf("message %q", fs[0].String())
	}
}

func zeroPad(t *testing.T, l *Layout) *Layout {
	t.Helper()
	c := *l
	c.Fields = append([]Field(nil), l.Fields...)
	for i := range c.Fields {
		if c.Fields[i].Kind == KindPad {
			c.Fields[i].Policy = PadZero
		}
	}
	if err := c.compile(); err != nil {
		t.Fatal(err)
	}
	return &c
}

// TestJudgeFindings: each rule's finding names its field, group, bytes and
// amounts.
func TestJudgeFindings(t *testing.T) {
	l := mustBuiltin(t, "dsv4-main", 512, 64)
	row := randomRow(rand.New(rand.NewPCG(2, 2)), 512, 1)
	recs := l.Encode(row)
	q, _ := l.Quant("nope")
	recs[1][3]++ // group 3's exponent: twice the scale, its codes following it
	q.encodeCodes(row[64*3:64*4], UE8M0Scale(recs[1][3]), recs[0][64*3:])
	recs[0][64*5+2] ^= 1     // group 5, element 2: the neighbour code
	recs[0][448+2*7+1] ^= 64 // rope element 7's high byte
	fs := l.Judge(row, recs, ByRecipe)
	if len(fs) != 3 {
		t.Fatalf("findings: %s", Summary(fs))
	}
	byRule := map[Rule]Finding{}
	for _, f := range fs {
		byRule[f.Rule] = f
	}
	s := byRule[RuleScale]
	if s.Field != "scales" || s.Group != 3 || s.Plane != 1 || len(s.Bytes) != 1 || s.Bytes[0] != 3 || !s.Scale.Pow2 || s.Scale.Off != 1 {
		t.Errorf("scale finding %+v %+v", s, s.Scale)
	}
	c := byRule[RuleCode]
	if c.Field != "nope" || c.Group != 5 || c.Codes.Elem != 64*5+2 || c.Codes.Bad != 1 || c.Codes.Off != 1 || c.Bytes[0] != 64*5+2 {
		t.Errorf("code finding %+v %+v", c, c.Codes)
	}
	b := byRule[RuleBF16]
	if b.Field != "rope" || b.BF16.Elem != 448+7 || len(b.Bytes) != 1 || b.Bytes[0] != 448+15 {
		t.Errorf("bf16 finding %+v %+v", b, b.BF16)
	}
	for _, want := range []string{"scale rule, scales group 3: stored scale 2^", "is 1 power of two from the recipe's",
		"code rule, nope group 5: 1 of 64 codes", "1 code off", "bf16 rule, rope: 1 of 64 bf16 elements differ"} {
		if !strings.Contains(Summary(fs), want) {
			t.Errorf("summary lacks %q:\n%s", want, Summary(fs))
		}
	}
}

// TestJudgeFloatScale: fp8-paged's float32 scale in plane 1, 2 ulps off.
func TestJudgeFloatScale(t *testing.T) {
	l := mustBuiltin(t, "fp8-paged", 128, 64)
	row := randomRow(rand.New(rand.NewPCG(3, 3)), 128, 1)
	recs := l.Encode(row)
	s := math.Float32frombits(binary.LittleEndian.Uint32(recs[1]))
	binary.LittleEndian.PutUint32(recs[1], math.Float32bits(stepULPs(s, 2)))
	fs := l.Judge(row, recs, ByRecipe)
	if len(fs) == 0 || fs[0].Rule != RuleScale || fs[0].Scale.Off != 2 || fs[0].Eps != nil || len(fs[0].Bytes) != 4 {
		t.Fatalf("2 ulps off: %s", Summary(fs))
	}
	if !strings.Contains(fs[0].String(), "2 ulps from the recipe's") || !strings.Contains(fs[0].String(), "allowed ±1") {
		t.Errorf("message %q", fs[0].String())
	}
	binary.LittleEndian.PutUint32(recs[1], math.Float32bits(stepULPs(s, 1)))
	recs = [][]byte{recs[0], recs[1]}
	if fs := l.Judge(row, recs, ByRecipe); len(fs) != 0 {
		// codes judged against the stored scale: a 1-ulp scale moves no
		// code except within CodeEps of a boundary
		t.Errorf("1 ulp off: %s", Summary(fs))
	}
	if fs := l.Judge(row, recs, Exact); len(fs) == 0 || !strings.Contains(fs[0].String(), "exact judgement") {
		t.Errorf("1 ulp off, exact: %s", Summary(fs))
	}
}

// TestFindingWants: a finding's Want holds, byte for byte, what its rule
// wants: in exact mode the reference encoding itself; by the recipe the
// reference's scale and bf16 bytes, and each failing code as the recipe's
// rounding of x over the stored scale.
func TestFindingWants(t *testing.T) {
	l := zeroPad(t, mustBuiltin(t, "dsv4-main", 512, 64))
	rng := rand.New(rand.NewPCG(4, 4))
	q, _ := l.Quant("nope")
	for range 20 {
		row := randomRow(rng, 512, 1)
		ref := l.Encode(row)
		recs := [][]byte{append([]byte(nil), ref[0]...), append([]byte(nil), ref[1]...)}
		g := rng.IntN(7)
		recs[1][g] += byte(1 + rng.IntN(3))               // a scale off by powers of two
		recs[0][rng.IntN(448)] ^= byte(1 + rng.IntN(255)) // a code anywhere
		recs[0][448+2*rng.IntN(64)] ^= 1                  // a rope byte
		recs[1][7] = 0x5a                                 // the pad byte, which must be zero
		for _, m := range []Mode{Exact, ByRecipe} {
			fs := l.Judge(row, recs, m)
			if len(fs) < 3 {
				t.Fatalf("mode %v: %s", m, Summary(fs))
			}
			for _, f := range fs {
				if len(f.Want) != len(f.Bytes) {
					t.Fatalf("%s: %d bytes, %d wants", f, len(f.Bytes), len(f.Want))
				}
				for k, at := range f.Bytes {
					want := ref[f.Plane][at]
					if f.Rule == RuleCode && m == ByRecipe {
						e := at // plane 0 starts with the codes
						want = q.Code(BF16ToFloat32(row[e]), UE8M0Scale(recs[1][e/64]))
					}
					if f.Want[k] != want {
						t.Errorf("mode %v %s: byte %d wants %#02x, the rule %#02x", m, f, at, f.Want[k], want)
					}
				}
			}
		}
	}
}

// TestRejectedScaleOneFinding: a rejected scale is reported once, whether
// the codes follow it or the recipe's scale; codes that follow neither
// are a second finding, judged against the stored scale.
func TestRejectedScaleOneFinding(t *testing.T) {
	l := mustBuiltin(t, "fp8-rows", 128, 64)
	row := randomRow(rand.New(rand.NewPCG(7, 7)), 128, 1)
	q, _ := l.Quant("value")
	ref := l.Encode(row)
	wrong := 3 * q.Scale(row)
	stored := [][]byte{append([]byte(nil), ref[0]...)}
	binary.LittleEndian.PutUint32(stored[0][128:], math.Float32bits(wrong))
	if fs := l.Judge(row, stored, ByRecipe); len(fs) != 1 || fs[0].Rule != RuleScale {
		t.Errorf("codes of the recipe's scale: %s", Summary(fs))
	}
	q.encodeCodes(row, wrong, stored[0])
	if fs := l.Judge(row, stored, ByRecipe); len(fs) != 1 || fs[0].Rule != RuleScale {
		t.Errorf("codes of the stored scale: %s", Summary(fs))
	}
	for i := range 128 {
		stored[0][i] = 0x38 // 1.0 everywhere: neither scale's codes
	}
	fs := l.Judge(row, stored, ByRecipe)
	if len(fs) != 2 || fs[1].Rule != RuleCode || fs[1].Codes.Scale != wrong {
		t.Errorf("codes of neither: %s", Summary(fs))
	}
}

// TestResolved: a layout with its recipes stated in full has the same
// arithmetic and reads back from JSON as it was written.
func TestResolved(t *testing.T) {
	for _, name := range Names() {
		base := mustBuiltin(t, name, 0, 4)
		for _, r := range []*Recipe{nil, {Eps: new(1e-8), Quantize: Reciprocal}} {
			l, err := base.WithRecipe(r)
			if err != nil {
				t.Fatal(err)
			}
			res := l.Resolved()
			back, err := Parse(res.JSON(), 4)
			if err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			for _, f := range l.Fields {
				q, ok := l.Quant(f.Name)
				if !ok {
					continue
				}
				if q2, _ := back.Quant(f.Name); q2 != q || res.Fields[0].Recipe == nil {
					t.Errorf("%s %v: field %s resolves to %+v, read back as %+v", name, r, f.Name, q, q2)
				}
			}
		}
	}
}
