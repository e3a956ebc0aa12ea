package layout

import "math"

// Amax is a group's largest magnitude. NaN elements are ignored, as a
// running max by comparison (a > amax) ignores them in every kernel.
func Amax(group []uint16) float32 {
	// A bf16 magnitude's bits order as its value does, and NaNs are the
	// patterns above infinity's.
	var amax uint16
	for _, e := range group {
		if a := e &^ 0x8000; a > amax && a <= 0x7f80 {
			amax = a
		}
	}
	return BF16ToFloat32(amax)
}

// Floor is the recipe's eps as the float32 the arithmetic compares with.
func (q Quant) Floor() float32 { return float32(q.Eps) }

// RawScale is max(amax, eps) / 448 (57344 for e5m2) in float32 with IEEE
// division: the recipe's scale before a power-of-two rule rounds it.
func (q Quant) RawScale(amax float32) float32 { return max(amax, q.Floor()) / q.Format.maxFinite() }

// ScaleOf is the recipe's scale for a group whose largest magnitude is
// amax: RawScale, rounded up to a power of two under the ue8m0 rule.
func (q Quant) ScaleOf(amax float32) float32 {
	s := q.RawScale(amax)
	if q.Pow2 {
		return Pow2(ue8m0Exponent(s))
	}
	return s
}

// Scale is the recipe's scale of a group of bf16 elements.
func (q Quant) Scale(group []uint16) float32 { return q.ScaleOf(q.Amax(group)) }

// Amax is the group's largest magnitude as the recipe takes it: Amax, or,
// under the Saturate policy, the largest finite one (±Inf saturate
// instead of making the scale infinite).
func (q Quant) Amax(group []uint16) float32 {
	if q.NonFinite != Saturate {
		return Amax(group)
	}
	var amax uint16
	for _, e := range group {
		if a := e &^ 0x8000; a > amax && a < 0x7f80 {
			amax = a
		}
	}
	return BF16ToFloat32(amax)
}

// Quotient is x over the scale as the recipe computes it in float32: x/s,
// or x times the float32 reciprocal 1/s.
func (q Quant) Quotient(x, s float32) float32 {
	if q.Reciprocal {
		r := 1 / s
		return x * r
	}
	return x / s
}

// Round converts a quotient to a code: nearest even, saturating at the
// format's largest value or, without saturation, NaN (e4m3, past 464) or
// infinity (e5m2, from 61440) past the last rounding boundary.
func (q Quant) Round(y float32) byte {
	switch {
	case q.Format == E5M2 && q.Saturate:
		return EncodeE5M2(y)
	case q.Format == E5M2:
		return encodeE5M2Unsaturated(y)
	case q.Saturate:
		return EncodeE4M3(y)
	}
	return encodeE4M3Unsaturated(y)
}

// Code is the recipe's code for element x under scale s.
func (q Quant) Code(x, s float32) byte { return q.Round(q.Quotient(x, s)) }

// e4m3Overflow is the rounding boundary between 448 and the value 480 the
// NaN code would have: without saturation a quotient above it is NaN, one
// on it rounds to the even 448 (PyTorch's and CUDA's non-saturating
// conversions).
const e4m3Overflow = 464

// e5m2Overflow is e5m2's: the boundary between 57344 and the infinity.
const e5m2Overflow = 61440

func encodeE4M3Unsaturated(x float32) byte {
	u := math.Float32bits(x)
	if a := u &^ (1 << 31); a > 0x43e80000 && a <= 0x7f800000 { // (464, ∞]
		return byte(u>>24)&0x80 | e4m3NaN
	}
	return EncodeE4M3(x)
}

// Pow2 is 2^e as a float32 (subnormal below 2^-126).
func Pow2(e int) float32 { return float32(math.Ldexp(1, e)) }

// ue8m0Exponent rounds a scale up to a power of two and returns its
// exponent, clamped to what an unsigned 8-bit exponent holds: -127 (a
// zero scale, from a zero group with no floor) to 127 (an infinite one).
func ue8m0Exponent(s float32) int {
	switch {
	case s <= 0:
		return -127
	case math.IsInf(float64(s), 1):
		return 127
	}
	frac, exp := math.Frexp(float64(s)) // s = frac · 2^exp, frac in [0.5, 1)
	if frac == 0.5 {
		exp--
	}
	return min(max(exp, -127), 127)
}

// UE8M0Byte is the stored form of a power-of-two scale 2^e: e + 127.
func UE8M0Byte(s float32) byte { return byte(ue8m0Exponent(s) + 127) }

// UE8M0Scale decodes a stored exponent byte; 255 is NaN (OCP MX).
func UE8M0Scale(b byte) float32 {
	if b == 255 {
		return float32(math.NaN())
	}
	return Pow2(int(b) - 127)
}

// isPow2 reports whether s is a positive power of two: a scale whose
// arithmetic is exact, since x/s and x·(1/s) then only shift x's exponent
// (an approximate reciprocal or division of a power of two is exact too).
func isPow2(s float32) bool {
	if !(s > 0) || math.IsInf(float64(s), 0) {
		return false
	}
	frac, _ := math.Frexp(float64(s))
	return frac == 0.5
}

// ulpOrder maps a float32 onto the integers so that adjacent floats are
// adjacent integers and ±0 are both 0: the distance of two floats in ulps
// is the difference of their orders.
func ulpOrder(f float32) int64 {
	b := math.Float32bits(f)
	if b&0x80000000 != 0 {
		return -int64(b & 0x7fffffff)
	}
	return int64(b)
}

// ULPs is the distance of two float32 values in ulps; NaN is infinitely
// far from everything but another NaN.
func ULPs(a, b float32) int64 {
	na, nb := a != a, b != b
	switch {
	case na && nb:
		return 0
	case na || nb:
		return math.MaxInt64
	}
	d := ulpOrder(a) - ulpOrder(b)
	if d < 0 {
		return -d
	}
	return d
}

// stepULPs moves a non-negative float32 n ulps (n may be negative),
// stopping at 0 and at +Inf.
func stepULPs(f float32, n int) float32 {
	o := ulpOrder(f) + int64(n)
	switch {
	case o <= 0:
		return 0
	case o >= int64(math.Float32bits(float32(math.Inf(1)))):
		return float32(math.Inf(1))
	}
	return math.Float32frombits(uint32(o))
}
