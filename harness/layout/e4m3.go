package layout

import "math"

// E4M3Max is the largest finite e4m3 magnitude; quantizers saturate to it.
const E4M3Max = 448

// e4m3NaN is the positive NaN code. e4m3 (the "fn" variant) has no
// infinities: exponent 15 with mantissa 7 is NaN, everything else is finite.
const e4m3NaN = 0x7f

// e4m3Table holds the value of every code, built from the format's
// definition rather than from a conversion routine.
var e4m3Table = buildE4M3Table()

func buildE4M3Table() [256]float32 {
	var t [256]float32
	for c := range 256 {
		sign := float32(1)
		if c&0x80 != 0 {
			sign = -1
		}
		exp, man := (c>>3)&0xf, c&0x7
		switch {
		case exp == 0xf && man == 0x7:
			t[c] = float32(math.NaN())
		case exp == 0:
			t[c] = sign * float32(man) / 8 * float32(math.Ldexp(1, -6))
		default:
			t[c] = sign * (1 + float32(man)/8) * float32(math.Ldexp(1, exp-7))
		}
	}
	return t
}

// DecodeE4M3 returns the value of an e4m3 code.
func DecodeE4M3(code byte) float32 { return e4m3Table[code] }

// EncodeE4M3 rounds x to the nearest e4m3 value, ties to the even code,
// saturating magnitudes at or above 448 (and infinities) to ±448 and
// mapping NaN to 0x7f. This is the behaviour of CUDA's
// __nv_cvt_float_to_fp8(x, __NV_SATFINITE, __NV_E4M3).
//
// It works on x's bits, as the hardware does: every case's rows are
// encoded, so this is the oracle's busiest function. The tests hold it to
// the definition (the nearest code by search over the value table) on
// every float32.
func EncodeE4M3(x float32) byte {
	u := math.Float32bits(x)
	sign := byte(u>>24) & 0x80
	a := u &^ (1 << 31)
	switch {
	case a > 0x7f800000: // NaN
		return e4m3NaN
	case a >= 0x43e00000: // 448 and above, infinity included
		return sign | 0x7e
	case a >= 0x3c800000: // normal: 2^-6 and above
		// Round the mantissa to three bits, ties to even; a carry moves
		// the exponent up, as it should. The code is the float32's
		// exponent and top mantissa bits, rebiased from 127 to 7.
		a += 0x7ffff + (a>>20)&1
		return sign | byte(a>>20-(127-7)<<3)
	}
	// Subnormal: the codes are the multiples of 2^-9 (0x08, the smallest
	// normal, is the multiple 8), and scaling by 2^9 is exact.
	return sign | byte(math.RoundToEven(float64(math.Float32frombits(a))*512))
}
