package layout

import (
	"fmt"
	"math"
)

// Mode is how value judgement treats fp8 arithmetic. bf16 fields are
// judged bit for bit in both modes, and pad bytes by the layout's policy.
type Mode uint8

const (
	// ByRecipe, the default, tells arithmetic from bugs: a stored scale
	// passes within the recipe's ulps of the recipe's scale, and each code
	// must be the recipe's rounding of x over the kernel's own stored
	// scale, its neighbour accepted only where x/s lies within CodeEps of
	// the rounding boundary between them.
	ByRecipe Mode = iota
	// Exact demands the reference encoding bit for bit: the bundled
	// kernels' own regression judgement.
	Exact
)

func (m Mode) String() string {
	if m == Exact {
		return "exact"
	}
	return "recipe"
}

// ParseMode reads a mode as String writes it.
func ParseMode(s string) (Mode, error) {
	switch s {
	case "recipe", "":
		return ByRecipe, nil
	case "exact":
		return Exact, nil
	}
	return 0, fmt.Errorf("value judgement %q: want recipe (the default: arithmetic within the declared recipe passes) or exact (bit-exact)", s)
}

// CodeEps is how close to a rounding boundary, relative to it, x/s must
// lie for a code on the boundary's far side to pass. The quotient's
// arithmetic — x·(1/s) against x/s, an approximate reciprocal or division
// — moves it by a few float32 ulps, under 2^-21; a rounding bug (toward
// zero, through bf16) moves codes by far more. On an exact tie the far
// side passes only where the arithmetic can be inexact: a scale that is a
// power of two divides exactly however it is computed, so its ties must
// go to the even code.
const CodeEps = 0x1p-20

// Rule names what a finding broke.
type Rule string

// The rules of value judgement.
const (
	RuleScale Rule = "scale" // a stored scale is not the recipe's, within its tolerance
	RuleCode  Rule = "code"  // a code is not the recipe's rounding of x over the stored scale
	RuleBF16  Rule = "bf16"  // a bf16 element is not the input's, bit for bit
	RuleFP16  Rule = "fp16"  // an fp16 element is not the input's, bit for bit
	RulePad   Rule = "pad"   // a pad byte the layout requires zero is not (or, kept, changed)
)

// ScaleDiff is how a stored scale missed the recipe's.
type ScaleDiff struct {
	Got, Want float32 // the stored scale and the recipe's (the reference's, in exact mode)
	Raw       float32 // the recipe's scale before the power-of-two rounding (Pow2)
	// Off is how far Got lies outside the accepted scales: float32 ulps,
	// or powers of two when Pow2.
	Off     int64
	Pow2    bool
	Allowed int  // the recipe's tolerance in ulps
	Exact   bool // judged in exact mode
}

func (d ScaleDiff) String() string {
	whose := "the recipe's"
	if d.Exact {
		whose = "the reference's"
	}
	if d.Pow2 {
		return fmt.Sprintf("stored scale %s is %s from %s %s (max(amax, eps)/448 = %.8g rounded up)",
			pow2String(d.Got), plural(d.Off, "power of two", "powers of two"), whose, pow2String(d.Want), d.Raw)
	}
	off := "beyond float32 range"
	if d.Off != math.MaxInt64 {
		off = plural(d.Off, "ulp", "ulps")
	}
	allowed := fmt.Sprintf("allowed ±%d", d.Allowed)
	if d.Exact {
		allowed = "exact judgement"
	}
	return fmt.Sprintf("stored scale %.8g is %s from %s %.8g (%s)", d.Got, off, whose, d.Want, allowed)
}

func pow2String(s float32) string {
	if isPow2(s) {
		_, e := math.Frexp(float64(s))
		return fmt.Sprintf("2^%d", e-1)
	}
	return fmt.Sprintf("%.8g", s)
}

func plural(n int64, one, many string) string {
	if n == 1 || n == -1 {
		return fmt.Sprintf("%d %s", n, one)
	}
	return fmt.Sprintf("%d %s", n, many)
}

// CodeDiff is how a group's codes missed the recipe's rounding.
type CodeDiff struct {
	Bad, Of   int     // codes not accepted, of the group's
	Elem      int     // the first of them: an index into the group (JudgeGroup), into the row (a Finding)
	Got, Want byte    // its stored code and the recipe's
	Off       int     // codes between them in value order; -1 when not comparable (NaN, opposite signs)
	Quotient  float64 // x / s for that element
	Scale     float32 // the scale the codes were judged against: the stored one (the reference's, in exact mode)
	Exact     bool
	Format    CodeFormat // the codes' format (e4m3 when not said)
	// Static says the scale is the kernel's input, not a stored one.
	Static bool
}

func (d CodeDiff) String() string {
	rule := "the rounding of x/s with the stored scale"
	switch {
	case d.Exact:
		rule = "the reference's"
	case d.Static:
		rule = "the rounding of x/s with the kernel's scale input"
	case d.Format == E2M1:
		rule = "the rounding of x/s with the stored block scale over the global scale"
	}
	off := "not comparable"
	if d.Off >= 0 {
		off = plural(int64(d.Off), "code", "codes") + " off"
	}
	codes := "codes"
	if d.Format != E4M3 {
		codes = d.Format.String() + " codes"
	}
	return fmt.Sprintf("%d of %d %s are not %s (%.8g): element %d holds %s (%g), want %s (%g), %s, x/s = %.8g",
		d.Bad, d.Of, codes, rule, d.Scale, d.Elem, d.Format.hex(d.Got), d.Format.Decode(d.Got), d.Format.hex(d.Want), d.Format.Decode(d.Want), off, d.Quotient)
}

// EpsMatch says that another floor explains a group's bytes.
type EpsMatch struct {
	Eps float64 // a floor under which the group's bytes pass
	// UpTo, when not zero, is the group's max |x|: the floor is not
	// active there, so any eps up to it explains the bytes as well.
	UpTo float64
}

func (e EpsMatch) String() string {
	s := fmt.Sprintf("the bytes match eps %s", FormatEps(e.Eps))
	if e.UpTo > 0 {
		s += fmt.Sprintf(" (as does any eps up to %.3g, the group's max |x|)", e.UpTo)
	}
	if e.Eps == 0 && e.UpTo == 0 {
		s += " (no floor: a zero group's scale is 0 and its codes NaN)"
	}
	return s + ": declare it in the plugin's recipe (Recipe.eps)"
}

// GroupVerdict is the judgement of one quantized group.
type GroupVerdict struct {
	Scale *ScaleDiff // nil when the stored scale passes
	Codes *CodeDiff  // nil when every code passes
	Bad   []int      // the group's codes that do not pass, by index
	Want  []byte     // the code the judgement wants at each of Bad: the recipe's (the reference's, in exact mode)
	Eps   *EpsMatch  // when the scale fails: another floor under which the group passes
}

// OK reports whether the group passes.
func (v GroupVerdict) OK() bool { return v.Scale == nil && v.Codes == nil }

// JudgeGroup judges one group: its bf16 input x, the scale the kernel
// stored (as a value: a ue8m0 byte decoded) and its codes. A group whose
// scale fails is also tried under other floors, so that the verdict can
// say which one the kernel uses; a floor changes what a tiny row means and
// is never tolerated.
func (q Quant) JudgeGroup(x []uint16, stored float32, codes []byte, m Mode) GroupVerdict {
	v := q.judge(x, stored, codes, m)
	if v.Scale != nil {
		v.Eps = q.explainEps(x, stored, codes, m)
	}
	return v
}

func (q Quant) judge(x []uint16, stored float32, codes []byte, m Mode) GroupVerdict {
	var v GroupVerdict
	amax := q.Amax(x)
	against := stored
	if m == Exact {
		against = q.ScaleOf(amax) // the reference's codes follow the reference's scale
		if math.Float32bits(stored) != math.Float32bits(against) {
			d, _ := q.JudgeScale(amax, stored)
			d.Allowed, d.Exact = 0, true
			v.Scale = &d
		}
	} else if d, ok := q.JudgeScale(amax, stored); !ok {
		v.Scale = &d
	}
	v.Codes, v.Bad, v.Want = q.judgeCodes(x, against, codes, m)
	if v.Scale != nil && v.Codes != nil && m != Exact {
		// The stored scale is rejected already: codes that follow the
		// recipe's scale instead are not a second bug to report.
		if d, _, _ := q.judgeCodes(x, q.ScaleOf(amax), codes, m); d == nil {
			v.Codes, v.Bad, v.Want = nil, nil, nil
		}
	}
	return v
}

// judgeCodes judges a group's codes against scale s: nil when every one
// passes, else the first failure, the failing indices and the code the
// judgement wants at each.
func (q Quant) judgeCodes(x []uint16, s float32, codes []byte, m Mode) (*CodeDiff, []int, []byte) {
	var buf [256]byte
	nominal := buf[:0]
	if len(codes) <= len(buf) {
		nominal = buf[:len(codes)]
	} else {
		nominal = make([]byte, len(codes))
	}
	q.encodeCodes(x, s, nominal) // the recipe's codes: most stored codes equal them
	var d *CodeDiff
	var bad []int
	var wants []byte
	for i, c := range codes {
		if c == nominal[i] {
			continue
		}
		xi := BF16ToFloat32(x[i])
		want, ok := nominal[i], false
		if m != Exact {
			want, ok = q.AcceptCode(xi, s, c)
		}
		if ok {
			continue
		}
		bad, wants = append(bad, i), append(wants, want)
		if d == nil {
			d = &CodeDiff{Of: len(codes), Elem: i, Got: c, Want: want, Off: codesOff(q.Format, c, want),
				Quotient: float64(xi) / float64(s), Scale: s, Exact: m == Exact, Format: q.Format, Static: q.Static()}
		}
	}
	if d != nil {
		d.Bad = len(bad)
	}
	return d, bad, wants
}

// JudgeScale decides whether a stored scale passes for a group whose
// largest magnitude is amax: within the recipe's ulps of max(amax,
// eps)/448 (every float32 scale the kernel's arithmetic can reach from
// there); under the ue8m0 rule, a power of two that one of those scales
// rounds up to.
func (q Quant) JudgeScale(amax, stored float32) (ScaleDiff, bool) {
	raw := q.RawScale(amax)
	d := ScaleDiff{Got: stored, Want: q.ScaleOf(amax), Raw: raw, Allowed: q.ScaleULPs}
	if !q.Pow2 {
		d.Off = ULPs(stored, raw)
		return d, d.Off <= int64(q.ScaleULPs)
	}
	if !isPow2(stored) {
		d.Off = ULPs(stored, d.Want) // not a power of two at all: say how far in ulps
		return d, false
	}
	d.Pow2 = true
	e := ue8m0Exponent(stored)
	d.Off = int64(e - ue8m0Exponent(d.Want))
	if d.Off < 0 {
		d.Off = -d.Off
	}
	lo := ue8m0Exponent(stepULPs(raw, -q.ScaleULPs))
	hi := ue8m0Exponent(stepULPs(raw, q.ScaleULPs))
	return d, e >= lo && e <= hi
}

// AcceptCode decides whether code c passes for element x under the stored
// scale s, and returns the recipe's code. c passes when it is the recipe's
// rounding of x/s, or its neighbour across a rounding boundary b with
// |x - b·s| ≤ CodeEps·b·s — except on an exact tie (x = b·s) under a
// power-of-two s, where no arithmetic can leave the tie and nearest even
// decides. x, s and b are exact in float64 and b·s is exact there (b has
// at most 5 significant bits, s 24), so the tie test is exact.
func (q Quant) AcceptCode(x, s float32, c byte) (byte, bool) {
	want := q.Code(x, s)
	if c == want || (q.Format.isNaN(c) && q.Format.isNaN(want)) {
		return want, true
	}
	b, ok := q.boundary(c, want)
	if !ok || !(s > 0) || math.IsInf(float64(s), 0) || math.Signbit(float64(x)) != (c&0x80 != 0) {
		return want, false
	}
	bs := b * float64(s)
	d := math.Abs(math.Abs(float64(x)) - bs)
	if d == 0 {
		return want, !isPow2(s)
	}
	return want, d <= CodeEps*bs
}

// boundary is the rounding boundary between two codes of one sign that
// are neighbours in value, as a magnitude.
func (q Quant) boundary(a, b byte) (float64, bool) {
	return boundary(q.Format, q.Saturate, a, b)
}

// boundary is the rounding boundary between two codes of format f and
// one sign that are neighbours in value, as a magnitude; without
// saturation the last one lies between the largest value and the
// overflow code (e4m3's NaN, e5m2's infinity).
func boundary(f CodeFormat, saturate bool, a, b byte) (float64, bool) {
	sign := f.signBit()
	if a&sign != b&sign {
		return 0, false
	}
	lo, hi := min(a&^sign, b&^sign), max(a&^sign, b&^sign)
	switch {
	case hi != lo+1:
		return 0, false
	case f == E4M3 && hi == e4m3NaN && !saturate:
		return e4m3Overflow, true
	case f == E5M2 && hi == 0x7c && !saturate:
		return e5m2Overflow, true
	case f.isNaN(hi) || f.isInf(hi):
		return 0, false
	}
	return (float64(f.Decode(lo)) + float64(f.Decode(hi))) / 2, true
}

// codesOff is how many codes apart a and b of format f are in value order
// (±0 both count as zero), or -1 when either is NaN.
func codesOff(f CodeFormat, a, b byte) int {
	if f.isNaN(a) || f.isNaN(b) {
		return -1
	}
	sign := f.signBit()
	rank := func(c byte) int {
		if c&sign != 0 {
			return -int(c &^ sign)
		}
		return int(c)
	}
	d := rank(a) - rank(b)
	if d < 0 {
		return -d
	}
	return d
}

// commonEps are the floors engines use, tried in this order when a
// group's scale fails: SGLang's Triton stores use 1e-8, the CUDA ones
// 1e-4; 0 is no floor.
var commonEps = []float64{1e-8, 1e-4, 1e-6, 1e-5, 1e-7, 1e-9, 1e-10, 1e-12, 1e-3, 0}

// explainEps looks for a floor under which the group passes: a common
// one, else, for a float32 scale, the one the stored scale implies
// (stored · 448, to one significant digit, as floors are written) when it
// lies above the group's max |x| and at most 1e-3. A ue8m0 scale implies
// only a range of floors, and a rounder or larger "floor" read off a
// wrong scale would name a bug as a declaration (a scale twice too large
// on a row of max 0.25 is no eps 0.5).
func (q Quant) explainEps(x []uint16, stored float32, codes []byte, m Mode) *EpsMatch {
	amax := q.Amax(x)
	cands := append([]float64(nil), commonEps...)
	if implied := roundSig(float64(stored)*E4M3Max, 1); !q.Pow2 && implied > float64(amax) && implied <= 1e-3 {
		cands = append(cands, implied)
	}
	for _, e := range cands {
		alt := q
		alt.Eps = e
		if float32(e) == q.Floor() || !alt.judge(x, stored, codes, m).OK() {
			continue
		}
		match := &EpsMatch{Eps: e}
		if float32(e) <= amax {
			match.UpTo = float64(amax)
		}
		return match
	}
	return nil
}

// roundSig rounds v to n significant digits.
func roundSig(v float64, n int) float64 {
	if v == 0 {
		return 0
	}
	p := math.Pow(10, float64(n-1)-math.Floor(math.Log10(v)))
	return math.Round(v*p) / p
}
