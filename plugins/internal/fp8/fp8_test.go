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
