package layout

import "math"

// BF16ToFloat32 widens a bfloat16 bit pattern; the conversion is exact.
func BF16ToFloat32(b uint16) float32 { return math.Float32frombits(uint32(b) << 16) }

// Float32ToBF16 rounds a float32 to bfloat16, ties to even; NaN stays NaN.
func Float32ToBF16(f float32) uint16 {
	u := math.Float32bits(f)
	if f != f {
		return uint16(u>>16) | 0x40
	}
	u += 0x7fff + (u>>16)&1
	return uint16(u >> 16)
}
