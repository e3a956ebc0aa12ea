package kernel

import (
	"math"

	"github.com/kvharness/kvharness/plugins/internal/fp8"
)

// Rounding is how a kernel turns a float32 quotient into an e4m3 code.
type rounding int

const (
	nearestEven rounding = iota // the hardware conversion
	tiesAway                    // round half away from zero, as a hand-written conversion with roundf does
	viaBF16                     // the quotient computed and rounded in bf16 first
)

// arith is a kernel's fp8 arithmetic, as its code computes it.
type arith struct {
	eps     float32
	torch   bool // PyTorch: scale = max(amax, eps) * fl32(1/448), codes x / s
	recip   bool // codes x * (1/s); otherwise x / s
	round   rounding
	partial bool // amax over the first half of each group only (a reduction that misses lanes)
	expDown bool // ue8m0: the exponent rounded down, not up
}

// scale is a group's scale: float32, or under ue8m0 a power of two.
func (a arith) scale(group []uint16, ue8m0 bool) float32 {
	n := len(group)
	if a.partial {
		n /= 2
	}
	var amax float32
	for _, e := range group[:n] {
		if v := float32(math.Abs(float64(fp8.BF16(e)))); v > amax { // NaN compares false
			amax = v
		}
	}
	var s float32
	if a.torch {
		r := float32(1.0 / 448) // a tensor divided by a scalar: times its float32 reciprocal
		s = max(amax, a.eps) * r
	} else {
		s = max(amax, a.eps) / 448
	}
	if ue8m0 {
		s = math.Float32frombits(uint32(a.exponent(s)+127) << 23)
	}
	return s
}

// exponent is the ue8m0 exponent of s from its bits: the float32 exponent,
// plus one when any mantissa bit is set (rounding up), clamped to the
// normal range the stored byte's scale 2^(b-127) keeps a float32 normal.
func (a arith) exponent(s float32) int {
	u := math.Float32bits(s)
	e := int(u>>23&0xff) - 127
	if u&0x7fffff != 0 && !a.expDown {
		e++
	}
	return min(max(e, -126), 127)
}

// exponentByte is the stored form of a power-of-two scale.
func exponentByte(s float32) byte { return byte(math.Float32bits(s) >> 23 & 0xff) }

// code is element x's code under scale s.
func (a arith) code(x, s float32) byte {
	var y float32
	switch {
	case a.round == viaBF16:
		y = bf16Round(x * bf16Round(1/s))
	case a.recip && !a.torch:
		r := 1 / s
		y = x * r
	default:
		y = x / s
	}
	if a.round == tiesAway {
		return e4m3TiesAway(y)
	}
	return fp8.FromFloat32(y)
}

// bf16Round rounds a float32 to the nearest bf16 value, ties to even. A
// NaN stays as it is: the rounding carry would otherwise turn the GPU's
// canonical NaN into -0.
func bf16Round(f float32) float32 {
	if f != f {
		return f
	}
	u := math.Float32bits(f)
	u += 0x7fff + (u>>16)&1
	return math.Float32frombits(u &^ 0xffff)
}

// e4m3TiesAway converts as C's roundf rounds: to nearest, half away from
// zero, saturating at ±448.
func e4m3TiesAway(y float32) byte {
	if y != y {
		return 0x7f
	}
	sign := byte(0)
	if math.Signbit(float64(y)) {
		sign = 0x80
	}
	a := math.Abs(float64(y))
	if a >= 448 {
		return sign | 0x7e
	}
	if a < 0x1p-6 { // subnormal: m · 2^-9, m = 8 is the smallest normal
		return sign | byte(math.Round(a*512))
	}
	frac, e := math.Frexp(a) // a = frac · 2^e, frac in [0.5, 1)
	m := int(math.Round(frac * 16))
	if m == 16 {
		m, e = 8, e+1
	}
	biased := e - 1 + 7
	if biased > 15 || (biased == 15 && m-8 == 7) {
		return sign | 0x7e
	}
	return sign | byte(biased<<3) | byte(m-8)
}
