// Package fp8 is the plugins' float32 → e4m3 conversion, written the way a
// kernel does it (bit manipulation, as CUDA's __nv_cvt_float_to_fp8 with
// __NV_SATFINITE), independently of the harness's table-search reference.
package fp8

import "math"

// FromFloat32 converts with round-to-nearest-even and saturation to ±448.
func FromFloat32(x float32) byte {
	if c, ok := normal(math.Float32bits(x)); ok {
		return c
	}
	return convert(x, true)
}

// normal converts the bits of a quotient in the normal e4m3 range
// [2^-6, 448), where most quotients are, in three integer operations: add
// half a unit of the third mantissa bit (less one when the kept bit is
// even, so ties go to even), then drop the bits below it and rebias the
// exponent from 127 to 7.
func normal(u uint32) (byte, bool) {
	a := u & 0x7fffffff
	if a-0x3c800000 >= 0x43e00000-0x3c800000 {
		return 0, false
	}
	return byte(u>>24)&0x80 | byte((a+0x7ffff+(a>>20)&1)>>20-0x3c0), true
}

// Quantize writes the codes of row's elements over scale s to dst,
// FromFloat32(x / s) each: a store kernel's inner loop.
func Quantize(dst []byte, row []uint16, s float32) {
	dst = dst[:len(row)]
	for i, e := range row {
		q := BF16(e) / s
		if c, ok := normal(math.Float32bits(q)); ok {
			dst[i] = c
			continue
		}
		dst[i] = convert(q, true)
	}
}

// FromFloat32TowardZero truncates instead of rounding: the round-toward-zero
// mutant.
func FromFloat32TowardZero(x float32) byte { return convert(x, false) }

func convert(x float32, nearest bool) byte {
	u := math.Float32bits(x)
	sign := byte(u>>24) & 0x80
	u &= 0x7fffffff
	switch {
	case u > 0x7f800000:
		return 0x7f // NaN
	case u >= 0x43e00000: // 448 and above, infinity included
		return sign | 0x7e
	}
	exp := int(u>>23) - 127
	if exp < -6 { // e4m3 subnormal: m · 2^-9
		f := float64(math.Float32frombits(u)) * 512
		m := math.Trunc(f)
		if nearest {
			m = math.RoundToEven(f)
		}
		return sign | byte(m) // m == 8 is the smallest normal, code 0x08
	}
	keep, rem := (u>>20)&0x7, u&0xfffff
	e := exp + 7
	if nearest && (rem > 0x80000 || (rem == 0x80000 && keep&1 == 1)) {
		keep++
		if keep == 8 {
			keep, e = 0, e+1
		}
	}
	if e > 15 || (e == 15 && keep == 7) {
		return sign | 0x7e
	}
	return sign | byte(e<<3) | byte(keep)
}

// BF16 widens a bfloat16 bit pattern to float32.
func BF16(b uint16) float32 { return math.Float32frombits(uint32(b) << 16) }

// Scale is the per-token scale: max(1e-4, max|x|) / 448, NaNs ignored.
// Without the floor (the scale-no-floor mutant) a zero row divides by zero.
func Scale(row []uint16, floor bool) float32 {
	var amax float32
	for _, e := range row {
		if a := math.Float32frombits(uint32(e&0x7fff) << 16); a > amax {
			amax = a
		}
	}
	if floor {
		amax = max(amax, 1e-4)
	}
	return amax / 448
}
