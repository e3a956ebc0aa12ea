package cpuread

import "math"

// E4M3 decodes an fp8 e4m3 ("fn") code: 1 sign bit, 4 exponent bits with
// bias 7, 3 mantissa bits; exponent 0 is subnormal (m · 2^-9), and
// exponent 15 with mantissa 7 is NaN (there are no infinities).
func E4M3(code byte) float32 {
	sign := uint32(code&0x80) << 24
	e, m := uint32(code>>3)&0xf, uint32(code&7)
	switch {
	case e == 0xf && m == 7:
		return math.Float32frombits(sign | 0x7fc00000)
	case e == 0:
		return math.Float32frombits(sign | math.Float32bits(float32(m)/512))
	}
	// A normal e4m3 value is a float32 with the exponent rebiased (+120)
	// and the three mantissa bits at the top of float32's 23.
	return math.Float32frombits(sign | (e+120)<<23 | m<<20)
}
