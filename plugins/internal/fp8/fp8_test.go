package fp8

import (
	"math"
	"testing"
)

// The plugins' converter and the harness's reference are tested against
// each other end to end by the harness; here it is pinned on known values.
func TestKnownValues(t *testing.T) {
	for _, tc := range []struct {
		x    float32
		want byte
	}{
		{0, 0x00}, {float32(math.Copysign(0, -1)), 0x80}, {1, 0x38}, {-1, 0xb8}, {448, 0x7e},
		{500, 0x7e}, {float32(math.Inf(-1)), 0xfe}, {float32(math.NaN()), 0x7f},
		{1.0625, 0x38},  // tie between 1 (0x38) and 1.125 (0x39): even
		{1.1875, 0x3a},  // tie between 1.125 (0x39) and 1.25 (0x3a): even
		{0x1p-9, 0x01},  // smallest subnormal
		{0x1p-10, 0x00}, // tie between 0 and 2^-9: even
		{0x1.8p-9, 0x02},
	} {
		if got := FromFloat32(tc.x); got != tc.want {
			t.Errorf("FromFloat32(%v) = %#02x, want %#02x", tc.x, got, tc.want)
		}
	}
	if got := FromFloat32TowardZero(1.1875); got != 0x39 {
		t.Errorf("toward zero(1.1875) = %#02x, want 0x39", got)
	}
}

func TestScaleFloor(t *testing.T) {
	zero := make([]uint16, 8)
	if s := Scale(zero, true); s != float32(1e-4)/448 {
		t.Errorf("floored scale of zeros = %v", s)
	}
	if s := Scale(zero, false); s != 0 {
		t.Errorf("unfloored scale of zeros = %v, want 0", s)
	}
}

// TestFastPathAsConvert holds FromFloat32's normal-range path to the
// general conversion on every sign, exponent and top 16 mantissa bits,
// with low bits on, beside and between the rounding boundaries.
func TestFastPathAsConvert(t *testing.T) {
	for hi := uint32(0); hi < 1<<16; hi++ {
		for _, lo := range []uint32{0, 1, 0x5a5a, 0x7fff, 0x8000, 0xffff} {
			x := math.Float32frombits(hi<<16 | lo)
			if got, want := FromFloat32(x), convert(x, true); got != want {
				t.Fatalf("FromFloat32(%v) = %#02x, convert says %#02x", x, got, want)
			}
		}
	}
}

// TestQuantizeAsFromFloat32 holds the row loop to the element conversion
// on rows of every bf16 pattern under scales from tiny to huge.
func TestQuantizeAsFromFloat32(t *testing.T) {
	row := make([]uint16, 1<<16)
	for i := range row {
		row[i] = uint16(i)
	}
	got := make([]byte, len(row))
	for _, s := range []float32{1e-30, 1e-4 / 448, 0.01, 1, 3.5 / 448, 1e30} {
		Quantize(got, row, s)
		for i, e := range row {
			if want := FromFloat32(BF16(e) / s); got[i] != want {
				t.Fatalf("Quantize(bf16 %#04x over %v) = %#02x, FromFloat32 says %#02x", e, s, got[i], want)
			}
		}
	}
}
