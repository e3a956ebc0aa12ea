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

// floorCode maps the top 12 bits of a positive float32 (sign, exponent and
// three mantissa bits) to the largest code whose value does not exceed it.
// Every e4m3 value has at most four significant bits, so truncating x to
// three mantissa bits never moves it past a code: the floor found for the
// truncated value is the floor of x. Built by search over the table.
var floorCode = buildFloorCode()

func buildFloorCode() []byte {
	t := make([]byte, 1<<11)
	for i := range t {
		x := float64(math.Float32frombits(uint32(i) << 20))
		c := 0
		for c < 0x7e && float64(e4m3Table[c+1]) <= x {
			c++
		}
		t[i] = byte(c)
	}
	return t
}

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
func EncodeE4M3(x float32) byte {
	if x != x {
		return e4m3NaN
	}
	var sign byte
	if math.Signbit(float64(x)) {
		sign = 0x80
	}
	a := math.Abs(float64(x))
	if a >= E4M3Max {
		return sign | 0x7e
	}
	// Positive codes 0x00..0x7e are increasing in value: take the last one
	// not above a, then pick between it and its successor.
	lo := int(floorCode[math.Float32bits(float32(a))>>20])
	below, above := a-float64(e4m3Table[lo]), float64(e4m3Table[lo+1])-a
	switch {
	case below < above:
		return sign | byte(lo)
	case above < below:
		return sign | byte(lo+1)
	case lo%2 == 0:
		return sign | byte(lo)
	default:
		return sign | byte(lo+1)
	}
}
