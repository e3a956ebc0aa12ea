package layout

import (
	"fmt"
	"math"
)

// CodeFormat is the number format of a quantized field's codes.
type CodeFormat uint8

// The code formats. Each value table is built from the format's
// definition, not from a conversion routine, so that the encoders' bit
// manipulation is checked against something written another way.
const (
	E4M3 CodeFormat = iota // fp8 e4m3fn: no infinities, 0x7f/0xff NaN, largest 448
	E5M2                   // fp8 e5m2: IEEE-like, 0x7c infinity, 0x7d-0x7f NaN, largest 57344
	E2M1                   // fp4 e2m1: 0, 0.5, 1, 1.5, 2, 3, 4, 6 and their negatives, no NaN
)

func (f CodeFormat) String() string {
	switch f {
	case E5M2:
		return "e5m2"
	case E2M1:
		return "e2m1"
	}
	return "e4m3"
}

// maxFinite is the format's largest finite magnitude.
func (f CodeFormat) maxFinite() float32 {
	switch f {
	case E5M2:
		return E5M2Max
	case E2M1:
		return E2M1Max
	}
	return E4M3Max
}

// Decode is a code's value.
func (f CodeFormat) Decode(c byte) float32 {
	switch f {
	case E5M2:
		return e5m2Table[c]
	case E2M1:
		return e2m1Table[c&0xf]
	}
	return e4m3Table[c]
}

// signBit is the code's sign bit.
func (f CodeFormat) signBit() byte {
	if f == E2M1 {
		return 0x8
	}
	return 0x80
}

// isNaN reports whether c is a NaN code.
func (f CodeFormat) isNaN(c byte) bool {
	switch f {
	case E5M2:
		return c&0x7f > 0x7c
	case E2M1:
		return false
	}
	return c&0x7f == e4m3NaN
}

// isInf reports whether c is an infinity (e5m2 only).
func (f CodeFormat) isInf(c byte) bool { return f == E5M2 && c&0x7f == 0x7c }

// hex writes a code as a report shows it: two hex digits, one for e2m1.
func (f CodeFormat) hex(c byte) string {
	if f == E2M1 {
		return fmt.Sprintf("%#x", c&0xf)
	}
	return fmt.Sprintf("%#02x", c)
}

// E5M2Max is the largest finite e5m2 magnitude.
const E5M2Max = 57344

// E2M1Max is the largest e2m1 magnitude.
const E2M1Max = 6

var e5m2Table = buildE5M2Table()

func buildE5M2Table() [256]float32 {
	var t [256]float32
	for c := range 256 {
		sign := float32(1)
		if c&0x80 != 0 {
			sign = -1
		}
		exp, man := (c>>2)&0x1f, c&0x3
		switch {
		case exp == 0x1f && man == 0:
			t[c] = sign * float32(math.Inf(1))
		case exp == 0x1f:
			t[c] = float32(math.NaN())
		case exp == 0:
			t[c] = sign * float32(man) / 4 * float32(math.Ldexp(1, -14))
		default:
			t[c] = sign * (1 + float32(man)/4) * float32(math.Ldexp(1, exp-15))
		}
	}
	return t
}

// DecodeE5M2 returns the value of an e5m2 code.
func DecodeE5M2(code byte) float32 { return e5m2Table[code] }

// EncodeE5M2 rounds x to the nearest e5m2 value, ties to the even code,
// saturating magnitudes beyond 57344 (infinities included) to ±57344 and
// mapping NaN to 0x7f: CUDA's __nv_cvt_float_to_fp8(x, __NV_SATFINITE,
// __NV_E5M2), which vLLM's fp8_e5m2 cache uses.
func EncodeE5M2(x float32) byte {
	u := math.Float32bits(x)
	sign := byte(u>>24) & 0x80
	a := u &^ (1 << 31)
	switch {
	case a > 0x7f800000:
		return 0x7f
	case a >= 0x47600000: // 57344 and above
		return sign | 0x7b
	}
	return sign | e5m2Magnitude(a)
}

// encodeE5M2Unsaturated is EncodeE5M2 without saturation: a magnitude
// that rounds past 57344 (from 61440, the tie going to the even
// infinity) is infinity.
func encodeE5M2Unsaturated(x float32) byte {
	u := math.Float32bits(x)
	sign := byte(u>>24) & 0x80
	a := u &^ (1 << 31)
	switch {
	case a > 0x7f800000:
		return 0x7f
	case a >= 0x47700000: // 61440 and above
		return sign | 0x7c
	case a >= 0x47600000:
		return sign | 0x7b
	}
	return sign | e5m2Magnitude(a)
}

// e5m2Magnitude encodes a finite magnitude below 57344 (as float32 bits).
func e5m2Magnitude(a uint32) byte {
	if a >= 0x38800000 { // normal: 2^-14 and above
		a += 0xfffff + (a>>21)&1
		return byte(a>>21 - (127-15)<<2)
	}
	// Subnormal: multiples of 2^-16, exact when scaled by 2^16.
	return byte(math.RoundToEven(float64(math.Float32frombits(a)) * 65536))
}

// e2m1Table holds the value of every e2m1 code (the low four bits).
var e2m1Table = [16]float32{0, 0.5, 1, 1.5, 2, 3, 4, 6, -0, -0.5, -1, -1.5, -2, -3, -4, -6}

// EncodeE2M1 rounds x to the nearest e2m1 value, ties to the even code,
// saturating at ±6: PTX cvt.rn.satfinite.e2m1x2.f32, which NVFP4 stores
// use. NaN has no code; it becomes +0, as vLLM's software conversion
// writes it. The result is a nibble.
func EncodeE2M1(x float32) byte {
	if x != x {
		return 0
	}
	var sign byte
	if math.Signbit(float64(x)) {
		sign, x = 0x8, -x
	}
	// The boundaries between neighbouring magnitudes; on a tie the even
	// code (the lower of 0.25, 1.25, 2.5; the upper of 0.75, 1.75, 3.5;
	// 4 at 5) wins.
	var m byte
	switch {
	case x < 0.25:
		m = 0
	case x == 0.25:
		m = 0
	case x < 0.75:
		m = 1
	case x <= 1.25:
		m = 2
	case x < 1.75:
		m = 3
	case x <= 2.5:
		m = 4
	case x < 3.5:
		m = 5
	case x <= 5:
		m = 6
	default:
		m = 7
	}
	return sign | m
}

// FP16ToFloat32 widens an IEEE half bit pattern; the conversion is exact.
func FP16ToFloat32(h uint16) float32 {
	sign := uint32(h&0x8000) << 16
	exp, man := uint32(h>>10)&0x1f, uint32(h&0x3ff)
	switch {
	case exp == 0x1f:
		return math.Float32frombits(sign | 0x7f800000 | man<<13)
	case exp != 0:
		return math.Float32frombits(sign | (exp+127-15)<<23 | man<<13)
	}
	v := float32(man) * float32(math.Ldexp(1, -24))
	if sign != 0 {
		return -v
	}
	return v
}

// Float32ToFP16 rounds a float32 to IEEE half, ties to even, overflowing
// to infinity; NaN stays NaN.
func Float32ToFP16(f float32) uint16 {
	u := math.Float32bits(f)
	sign := uint16(u>>16) & 0x8000
	a := u &^ (1 << 31)
	switch {
	case a > 0x7f800000:
		return sign | 0x7e00
	case a >= 0x477ff000: // 65520 and above round to infinity
		return sign | 0x7c00
	case a >= 0x38800000: // normal: 2^-14 and above
		a += 0xfff + (a>>13)&1
		return sign | uint16(a>>13-(127-15)<<10)
	}
	return sign | uint16(math.RoundToEven(float64(math.Float32frombits(a))*(1<<24)))
}
