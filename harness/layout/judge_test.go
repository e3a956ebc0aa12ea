package layout

import (
	"math"
	"math/big"
	"math/rand/v2"
	"sort"
	"strings"
	"testing"
)

// judgeScales are the scales the code tests sweep: every kind a kernel
// stores (powers of two, scales of bf16 rows under each floor, PyTorch's,
// 1 ulp off either way) and random ones.
func judgeScales() []float32 {
	out := []float32{1, 0.5, 0x1p-10, 0x1p-40, 0x1p20, float32(1e-4) / 448, float32(1e-8) / 448}
	rng := rand.New(rand.NewPCG(3, 4))
	for range 12 {
		amax := BF16ToFloat32(uint16(0x3000 + rng.IntN(0x1800)))
		s := amax / 448
		out = append(out, s, amax*torchReciprocal448, math.Nextafter32(s, 0), math.Nextafter32(s, 1))
	}
	for range 6 {
		out = append(out, float32(math.Ldexp(0.5+rng.Float64()/2, rng.IntN(40)-30)))
	}
	return out
}

// everyBF16 calls f with every finite bf16 value.
func everyBF16(f func(x float32)) {
	for b := range 1 << 16 {
		if x := BF16ToFloat32(uint16(b)); x == x && !math.IsInf(float64(x), 0) {
			f(x)
		}
	}
}

// acceptedByRat is AcceptCode's rule computed independently in exact
// rational arithmetic: c passes if it is the nominal code, or a same-sign
// neighbour across a boundary b with |x/s - b| <= CodeEps·b, and on an
// exact tie only if s is not a power of two.
func acceptedByRat(q Quant, x, s float32, c byte) bool {
	want := q.Code(x, s)
	if c == want || (c&0x7f == 0x7f && want&0x7f == 0x7f) {
		return true
	}
	if (c&0x80 != 0) != math.Signbit(float64(x)) || c&0x80 != want&0x80 {
		return false
	}
	lo, hi := min(c&0x7f, want&0x7f), max(c&0x7f, want&0x7f)
	if hi != lo+1 || hi == 0x7f && q.Saturate {
		return false
	}
	bf := 464.0
	if hi != 0x7f {
		bf = (float64(DecodeE4M3(lo)) + float64(DecodeE4M3(hi))) / 2 // exact: at most 5 significant bits
	}
	// Far from the threshold float64 decides (its error, ~1e-16, is far
	// below CodeEps); near it and on ties, exact rationals do.
	rel := math.Abs(math.Abs(float64(x))/float64(s)-bf) / bf
	if rel > 2*CodeEps {
		return false
	}
	if rel < CodeEps/2 && rel > 0x1p-40 {
		return true
	}
	b := new(big.Rat).SetFloat64(bf)
	r := new(big.Rat).SetFloat64(math.Abs(float64(x)))
	r.Quo(r, new(big.Rat).SetFloat64(float64(s)))
	d := new(big.Rat).Sub(r, b)
	d.Abs(d)
	if d.Sign() == 0 {
		frac, _ := math.Frexp(float64(s))
		return frac != 0.5
	}
	lim := new(big.Rat).Mul(b, new(big.Rat).SetFloat64(CodeEps))
	return d.Cmp(lim) <= 0
}

// TestAcceptCodeAgainstRationals sweeps every finite bf16 x over the test
// scales, and the codes a kernel could plausibly store instead of the
// nominal one (both neighbours, the other sign), comparing AcceptCode with
// the rational rule.
func TestAcceptCodeAgainstRationals(t *testing.T) {
	for _, recip := range []bool{false, true} {
		q := DefaultQuant(KindScaleF32)
		q.Reciprocal = recip
		for _, s := range judgeScales() {
			everyBF16(func(x float32) {
				want := q.Code(x, s)
				if _, ok := q.AcceptCode(x, s, want); !ok {
					t.Fatalf("s=%v x=%v: the nominal code %#02x fails", s, x, want)
				}
				for _, c := range []byte{want + 1, want - 1, want ^ 0x80} {
					_, got := q.AcceptCode(x, s, c)
					if exp := acceptedByRat(q, x, s, c); got != exp {
						t.Fatalf("reciprocal=%v s=%v x=%v code %#02x (nominal %#02x): AcceptCode %v, rational rule %v",
							recip, s, x, c, want, got, exp)
					}
				}
			})
		}
	}
}

// TestArithmeticVariantsPass: the codes of every benign arithmetic — x/s
// and x·(1/s) either way round, a reciprocal 1 or 2 ulps off (approximate
// division) — pass under both declared forms, for every bf16 x. A power
// of two has an exact reciprocal however it is computed, so the perturbed
// forms skip those scales.
func TestArithmeticVariantsPass(t *testing.T) {
	for _, declared := range []bool{false, true} {
		q := DefaultQuant(KindScaleF32)
		q.Reciprocal = declared
		for _, s := range judgeScales() {
			r := 1 / s
			forms := map[string]func(x float32) float32{
				"x/s":            func(x float32) float32 { return x / s },
				"x*(1/s)":        func(x float32) float32 { return x * r },
				"x*(1/s + 1ulp)": func(x float32) float32 { return x * math.Nextafter32(r, 2*r) },
				"x*(1/s - 2ulp)": func(x float32) float32 {
					return x * math.Nextafter32(math.Nextafter32(r, 0), 0)
				},
				"x/s + 2ulp": func(x float32) float32 {
					y := x / s
					return math.Nextafter32(math.Nextafter32(y, 2*y), 2*y)
				},
			}
			everyBF16(func(x float32) {
				for name, f := range forms {
					if isPow2(s) && name != "x/s" && name != "x*(1/s)" {
						continue
					}
					if _, ok := q.AcceptCode(x, s, EncodeE4M3(f(x))); !ok {
						t.Fatalf("declared reciprocal=%v: %s with s=%v x=%v gives %#02x, rejected (nominal %#02x)",
							declared, name, s, x, EncodeE4M3(f(x)), q.Code(x, s))
					}
				}
			})
		}
	}
}

// TestRoundingBugsFail: round toward zero, ties away from zero and a
// quotient rounded through bf16 first are each rejected wherever they
// differ from nearest even and the quotient is not within CodeEps of the
// boundary; ties away from zero on every exact tie under a power-of-two
// scale. It also counts how often each is caught, so that a tolerance
// that hid a class would show as zero.
func TestRoundingBugsFail(t *testing.T) {
	q := DefaultQuant(KindScaleF32)
	bugs := map[string]func(y float32) byte{
		"toward zero":     rtzE4M3,
		"ties away":       rnaE4M3,
		"through bf16":    func(y float32) byte { return EncodeE4M3(BF16ToFloat32(Float32ToBF16(y))) },
		"off by one code": func(y float32) byte { return EncodeE4M3(y) ^ 1 },
	}
	caught, hidden := map[string]int{}, map[string]int{}
	pow2Ties := 0
	for _, s := range judgeScales() {
		everyBF16(func(x float32) {
			y := x / s
			for name, bug := range bugs {
				c := bug(y)
				_, ok := q.AcceptCode(x, s, c)
				if c == q.Code(x, s) {
					continue
				}
				if !ok {
					caught[name]++
				} else {
					hidden[name]++
				}
				if ok && !acceptedByRat(q, x, s, c) {
					t.Fatalf("%s: s=%v x=%v code %#02x passes against the rational rule", name, s, x, c)
				}
				if ok && name == "ties away" && isPow2(s) {
					t.Fatalf("ties away: s=%v (a power of two) x=%v code %#02x passes", s, x, c)
				}
				if name == "ties away" && isPow2(s) {
					pow2Ties++
				}
			}
		})
	}
	for name := range bugs {
		if caught[name] == 0 {
			t.Errorf("%s: never caught", name)
		}
	}
	if pow2Ties == 0 {
		t.Error("no exact tie under a power-of-two scale was swept")
	}
	t.Logf("codes caught: %v; passed as arithmetic (within CodeEps of a boundary, or a tie under a scale that is no power of two): %v; ties away caught on %d power-of-two ties",
		caught, hidden, pow2Ties)
}

// rtzE4M3 truncates to e4m3, independently of the plugins' converter.
func rtzE4M3(y float32) byte {
	if y != y {
		return 0x7f
	}
	sign := byte(0)
	if math.Signbit(float64(y)) {
		sign = 0x80
	}
	a := float32(math.Abs(float64(y)))
	// The last code not above a: positive codes 0..0x7e increase in value.
	best := sort.Search(0x7f, func(c int) bool { return DecodeE4M3(byte(c)) > a }) - 1
	return sign | byte(max(best, 0))
}

// rnaE4M3 rounds to nearest with ties away from zero.
func rnaE4M3(y float32) byte {
	c := EncodeE4M3(y)
	a := math.Abs(float64(y))
	lo := rtzE4M3(float32(a))
	if lo < 0x7e && a == (float64(DecodeE4M3(lo))+float64(DecodeE4M3(lo+1)))/2 {
		return c&0x80 | (lo + 1)
	}
	return c
}

// TestScaleTolerance: a scale passes within the declared ulps and fails
// one ulp beyond, both ways, for every bf16 amax; exact judgement takes
// the reference's scale only.
func TestScaleTolerance(t *testing.T) {
	for _, ulps := range []int{0, 1, 2} {
		q := DefaultQuant(KindScaleF32)
		q.ScaleULPs = ulps
		for b := range uint16(0x7f80) {
			amax := BF16ToFloat32(b)
			want := q.ScaleOf(amax)
			for _, dir := range []int{-1, 1} {
				in, out := stepULPs(want, dir*ulps), stepULPs(want, dir*(ulps+1))
				if _, ok := q.JudgeScale(amax, in); !ok {
					t.Fatalf("ulps %d amax %v: %v (%d ulps off) rejected", ulps, amax, in, dir*ulps)
				}
				if d, ok := q.JudgeScale(amax, out); ok && out != want && out != 0 {
					t.Fatalf("ulps %d amax %v: %v (%d ulps off) accepted: %v", ulps, amax, out, dir*(ulps+1), d)
				}
			}
		}
	}
}

// TestUE8M0Tolerance: under the ue8m0 rule the exponent must be the
// rounding up of a scale within the tolerance: the neighbour exponent
// passes only where max(amax, eps)/448 lies within 1 ulp of a power of
// two, and every code is judged strictly (a power-of-two scale divides
// exactly: ties go to the even code).
func TestUE8M0Tolerance(t *testing.T) {
	q := DefaultQuant(KindScaleUE8M0)
	for b := range uint16(0x7f80) {
		amax := BF16ToFloat32(b)
		raw := q.RawScale(amax)
		want := ue8m0Exponent(raw)
		for e := want - 2; e <= want+2; e++ {
			_, ok := q.JudgeScale(amax, Pow2(e))
			near := ue8m0Exponent(stepULPs(raw, -1)) <= e && e <= ue8m0Exponent(stepULPs(raw, 1))
			if ok != near {
				t.Fatalf("amax %v (raw scale %v): exponent %d accepted=%v, want %v (recipe's %d)", amax, raw, e, ok, near, want)
			}
		}
		if _, ok := q.JudgeScale(amax, raw*1.5); ok && !isPow2(raw*1.5) {
			t.Fatalf("amax %v: a scale that is no power of two (%v) passes", amax, raw*1.5)
		}
	}
	// The neighbour passes at a power of two: amax = 448·2^k gives raw = 2^k
	// exactly, which PyTorch's multiply can put 1 ulp above (exponent k+1).
	if _, ok := q.JudgeScale(448*4, 4); !ok {
		t.Error("amax 1792: exponent 2 (2^2 = 1792/448) rejected")
	}
	if _, ok := q.JudgeScale(448*4, 8); !ok {
		t.Error("amax 1792: exponent 3 (1 ulp above 2^2 rounds up to it) rejected")
	}
	if _, ok := q.JudgeScale(448*4, 16); ok {
		t.Error("amax 1792: exponent 4 accepted")
	}
}

// TestEpsExplains: a kernel with another floor fails, and the verdict names
// the floor; declared, the same bytes pass. A zero group pins the floor
// exactly; a tiny one says any floor up to its max passes.
func TestEpsExplains(t *testing.T) {
	dflt := DefaultQuant(KindScaleF32)
	sglang := dflt
	sglang.Eps, sglang.Reciprocal = 1e-8, true
	tiny := make([]uint16, 64)
	for i := range tiny {
		tiny[i] = Float32ToBF16(float32(i-32) * 1e-6)
	}
	for _, tc := range []struct {
		name  string
		group []uint16
		upTo  bool
	}{{"zero", make([]uint16, 64), false}, {"tiny", tiny, true}} {
		s := sglang.Scale(tc.group)
		codes := make([]byte, len(tc.group))
		sglang.encodeCodes(tc.group, s, codes)
		v := dflt.JudgeGroup(tc.group, s, codes, ByRecipe)
		if v.Scale == nil || v.Eps == nil || v.Eps.Eps != 1e-8 || (v.Eps.UpTo > 0) != tc.upTo {
			t.Fatalf("%s group under eps 1e-8, judged by the default: %+v, eps %+v", tc.name, v.Scale, v.Eps)
		}
		if msg := v.Eps.String(); !strings.Contains(msg, "eps 1e-8") || !strings.Contains(msg, "declare it") {
			t.Errorf("%s: explanation %q", tc.name, msg)
		}
		if v := sglang.JudgeGroup(tc.group, s, codes, ByRecipe); !v.OK() {
			t.Errorf("%s group under eps 1e-8, declared: %+v %+v", tc.name, v.Scale, v.Codes)
		}
		if v := dflt.JudgeGroup(tc.group, s, codes, Exact); v.Eps == nil || v.Eps.Eps != 1e-8 {
			t.Errorf("%s: exact judgement names no floor: %+v", tc.name, v.Eps)
		}
	}
	// No floor at all on a zero group: scale 0, NaN codes; named as eps 0.
	nofloor := dflt
	nofloor.Eps = 0
	zero := make([]uint16, 16)
	codes := make([]byte, 16)
	nofloor.encodeCodes(zero, 0, codes)
	v := dflt.JudgeGroup(zero, 0, codes, ByRecipe)
	if v.Eps == nil || v.Eps.Eps != 0 || !strings.Contains(v.Eps.String(), "NaN") {
		t.Errorf("no-floor zero group: %+v", v.Eps)
	}
	// A scale from part of the row is no floor: nothing explains it.
	row := []uint16{Float32ToBF16(1), Float32ToBF16(3)}
	part := dflt.Scale(row[:1])
	codes = make([]byte, 2)
	dflt.encodeCodes(row, part, codes)
	if v := dflt.JudgeGroup(row, part, codes, ByRecipe); v.Scale == nil || v.Eps != nil {
		t.Errorf("scale from part of the row: %+v, explained by %+v", v.Scale, v.Eps)
	}
}

// TestCodesFollowTheStoredScale: codes are judged against the kernel's own
// stored scale, so a scale off beyond tolerance fails the scale rule alone
// when its codes follow it, and codes that ignore the stored scale fail
// the code rule even when the stored scale is right.
func TestCodesFollowTheStoredScale(t *testing.T) {
	q := DefaultQuant(KindScaleF32)
	group := torchRows(3, 128, 9)[2]
	s := q.Scale(group)
	wrong := s * 1.01
	codes := make([]byte, len(group))
	q.encodeCodes(group, wrong, codes)
	v := q.JudgeGroup(group, wrong, codes, ByRecipe)
	if v.Scale == nil || v.Codes != nil {
		t.Errorf("codes of a wrong stored scale: scale %+v codes %+v", v.Scale, v.Codes)
	}
	v = q.JudgeGroup(group, s, codes, ByRecipe)
	if v.Scale != nil || v.Codes == nil || v.Codes.Bad == 0 {
		t.Errorf("codes of another scale under the right one: scale %+v codes %+v", v.Scale, v.Codes)
	}
	if !strings.Contains(v.Codes.String(), "codes are not the rounding of x/s") {
		t.Errorf("message %q", v.Codes.String())
	}
}

func TestUnsaturated(t *testing.T) {
	q := DefaultQuant(KindScaleF32)
	q.Saturate = false
	for _, tc := range []struct {
		y    float32
		want byte
	}{{448, 0x7e}, {460, 0x7e}, {464, 0x7e}, {465, 0x7f}, {-470, 0xff}, {float32(math.Inf(1)), 0x7f}} {
		if got := q.Round(tc.y); got != tc.want {
			t.Errorf("unsaturated %v → %#02x, want %#02x", tc.y, got, tc.want)
		}
	}
	// Near 464 the NaN code is the neighbour of 448.
	if _, ok := q.AcceptCode(464.0001, 1, 0x7f); !ok {
		t.Error("464.0001: NaN, the far side of the overflow boundary, rejected")
	}
	sat := DefaultQuant(KindScaleF32)
	if _, ok := sat.AcceptCode(464.0001, 1, 0x7f); ok {
		t.Error("saturating: NaN accepted for 464.0001")
	}
}

func TestParseMode(t *testing.T) {
	for s, want := range map[string]Mode{"": ByRecipe, "recipe": ByRecipe, "exact": Exact} {
		if m, err := ParseMode(s); err != nil || m != want {
			t.Errorf("ParseMode(%q) = %v, %v", s, m, err)
		}
	}
	if _, err := ParseMode("loose"); err == nil || !strings.Contains(err.Error(), "exact") {
		t.Errorf("ParseMode(loose): %v", err)
	}
}

// TestEpsImplied: an uncommon floor on a float32 scale is read off the
// stored scale; a ue8m0 exponent rounded the wrong way on a zero group is
// not taken for a floor.
func TestEpsImplied(t *testing.T) {
	dflt := DefaultQuant(KindScaleF32)
	odd := dflt
	odd.Eps = 5e-5
	zero := make([]uint16, 32)
	s := odd.Scale(zero)
	codes := make([]byte, 32)
	odd.encodeCodes(zero, s, codes)
	if v := dflt.JudgeGroup(zero, s, codes, ByRecipe); v.Eps == nil || v.Eps.Eps != 5e-5 {
		t.Errorf("eps 5e-5: explained by %+v", v.Eps)
	}
	ue := DefaultQuant(KindScaleUE8M0)
	ue.Eps = 1e-8
	down := Pow2(ue8m0Exponent(ue.RawScale(0)) - 1)
	if v := ue.JudgeGroup(zero, down, codes, ByRecipe); v.Scale == nil || v.Eps != nil {
		t.Errorf("ue8m0 rounded down on a zero group: scale %+v, explained by %+v", v.Scale, v.Eps)
	}
}
