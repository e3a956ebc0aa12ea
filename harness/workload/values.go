package workload

import (
	"math"
	"math/rand/v2"

	"github.com/kvharness/kvharness/harness/layout"
)

// The value classes' fills (RowKind). Each draws from the row's own
// source, so a row stays a (kind, seed) pair.

// fillSubnormal writes bf16 subnormals (exponent 0, mantissa 1..127) of
// either sign, an eighth of them tiny normals (exponents 1 to 3) instead,
// and one -0.
func fillSubnormal(rng *rand.Rand, out []uint16) {
	for i := range out {
		sign := uint16(rng.IntN(2)) << 15
		if rng.IntN(8) == 0 {
			out[i] = sign | uint16(1+rng.IntN(3))<<7 | uint16(rng.IntN(128))
			continue
		}
		out[i] = sign | uint16(1+rng.IntN(127))
	}
	out[rng.IntN(len(out))] = 0x8000
}

// The largest finite bf16 magnitude (3.39e38) and the one below it.
const (
	bf16MaxFinite = 0x7f7f
	bf16BelowMax  = 0x7f7e
)

// fillMaxFinite writes large values (N(0,1)·2^100), a quarter of them
// the largest finite magnitudes instead, and at least one of those.
func fillMaxFinite(rng *rand.Rand, out []uint16) {
	for i := range out {
		sign := uint16(rng.IntN(2)) << 15
		switch rng.IntN(8) {
		case 0:
			out[i] = sign | bf16MaxFinite
		case 1:
			out[i] = sign | bf16BelowMax
		default:
			out[i] = layout.Float32ToBF16(float32(rng.NormFloat64() * 0x1p100))
		}
	}
	out[rng.IntN(len(out))] = uint16(rng.IntN(2))<<15 | bf16MaxFinite
}

// e2m1 is every non-negative FP4 (e2m1) value.
var e2m1 = []float64{0, 0.5, 1, 1.5, 2, 3, 4, 6}

// fillBoundary writes, times 2^k (k in -8..8), e4m3 midpoints (the ties
// between adjacent codes), e5m2 midpoints up to 448, e2m1 midpoints, a
// bf16 ulp either side of an e4m3 midpoint, and e4m3 values themselves,
// each of either sign; one element is ±448·2^k, the amax that makes an
// e4m3 scale exactly 2^k.
func fillBoundary(rng *rand.Rand, out []uint16) {
	k := rng.IntN(17) - 8
	for i := range out {
		var v float64
		switch rng.IntN(6) {
		case 0, 1:
			v = e4m3Midpoint(rng)
		case 2:
			v = e5m2Midpoint(rng)
		case 3:
			j := rng.IntN(len(e2m1) - 1)
			v = (e2m1[j] + e2m1[j+1]) / 2
		case 4:
			b := layout.Float32ToBF16(float32(e4m3Midpoint(rng)))
			if b != 0 && rng.IntN(2) == 0 {
				b-- // one ulp toward zero
			} else {
				b++
			}
			v = float64(layout.BF16ToFloat32(b))
		default:
			v = float64(layout.DecodeE4M3(byte(rng.IntN(0x7f))))
		}
		out[i] = layout.Float32ToBF16(float32(math.Ldexp(v, k)))
		if rng.IntN(2) == 0 {
			out[i] |= 0x8000
		}
	}
	out[rng.IntN(len(out))] = layout.Float32ToBF16(float32(math.Ldexp(448, k))) | uint16(rng.IntN(2))<<15
}

// e4m3Midpoint is the tie between two adjacent positive e4m3 codes (0
// and 0x01 up to 0x7d and 0x7e), exact in bf16.
func e4m3Midpoint(rng *rand.Rand) float64 {
	c := byte(rng.IntN(0x7e))
	return (float64(layout.DecodeE4M3(c)) + float64(layout.DecodeE4M3(c+1))) / 2
}

// e5m2Midpoint is the tie between two adjacent positive e5m2 values
// below 448: exponents -16 (subnormal) to 7, two mantissa bits.
func e5m2Midpoint(rng *rand.Rand) float64 {
	e := rng.IntN(23) - 15 // the lower value's exponent, -15 standing for the subnormals
	m := rng.IntN(4)
	lo := math.Ldexp(1+float64(m)/4, e)
	step := math.Ldexp(0.25, e)
	if e == -15 { // subnormal: m · 2^-16
		lo, step = math.Ldexp(float64(m), -16), math.Ldexp(1, -16)
	}
	return lo + step/2
}

// fillNonFinite writes normal values with one to three ±Inf or NaN (a
// quiet one, a signalling payload, a negative one) among them.
func fillNonFinite(rng *rand.Rand, out []uint16) {
	scale := math.Ldexp(1, rng.IntN(24)-12)
	for i := range out {
		out[i] = layout.Float32ToBF16(float32(rng.NormFloat64() * scale))
	}
	specials := []uint16{0x7f80, 0xff80, 0x7fc0, 0x7f81, 0xffc0}
	for range 1 + rng.IntN(3) {
		out[rng.IntN(len(out))] = specials[rng.IntN(len(specials))]
	}
}
