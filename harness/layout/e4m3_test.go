package layout

import (
	"math"
	"testing"
)

func TestE4M3EveryCodeDecodes(t *testing.T) {
	finite := 0
	for c := range 256 {
		v := DecodeE4M3(byte(c))
		isNaN := c&0x7f == 0x7f
		if isNaN != (v != v) {
			t.Errorf("code %#02x decodes to %v; NaN only at 0x7f/0xff", c, v)
		}
		if !isNaN {
			finite++
			if math.Abs(float64(v)) > E4M3Max {
				t.Errorf("code %#02x decodes to %v, beyond ±448", c, v)
			}
		}
	}
	if finite != 254 {
		t.Errorf("%d finite codes, want 254", finite)
	}
	if got := DecodeE4M3(0x7e); got != 448 {
		t.Errorf("0x7e = %v, want 448", got)
	}
	if got := DecodeE4M3(0x01); got != float32(math.Ldexp(1, -9)) {
		t.Errorf("smallest subnormal = %v, want 2^-9", got)
	}
}

func TestE4M3FiniteValuesRoundTrip(t *testing.T) {
	for c := range 256 {
		if c&0x7f == 0x7f {
			continue
		}
		if got := EncodeE4M3(DecodeE4M3(byte(c))); got != byte(c) {
			t.Errorf("encode(decode(%#02x)) = %#02x", c, got)
		}
	}
}

func TestE4M3TiesToEven(t *testing.T) {
	for c := 0; c < 0x7e; c++ {
		lo, hi := DecodeE4M3(byte(c)), DecodeE4M3(byte(c+1))
		mid := (lo + hi) / 2 // exact: e4m3 values need at most 4 significant bits
		if float64(mid) != (float64(lo)+float64(hi))/2 {
			t.Fatalf("midpoint of %#02x and %#02x is not exact in float32", c, c+1)
		}
		even := byte(c)
		if c%2 == 1 {
			even = byte(c + 1)
		}
		if got := EncodeE4M3(mid); got != even {
			t.Errorf("tie %v between %#02x and %#02x encodes to %#02x, want %#02x", mid, c, c+1, got, even)
		}
		if got := EncodeE4M3(-mid); got != 0x80|even {
			t.Errorf("tie %v encodes to %#02x, want %#02x", -mid, got, 0x80|even)
		}
		if got := EncodeE4M3(math.Nextafter32(mid, 0)); got != byte(c) {
			t.Errorf("just below tie %v encodes to %#02x, want %#02x", mid, got, c)
		}
		if got := EncodeE4M3(math.Nextafter32(mid, 1000)); got != byte(c+1) {
			t.Errorf("just above tie %v encodes to %#02x, want %#02x", mid, got, c+1)
		}
	}
}

func TestE4M3Saturates(t *testing.T) {
	for _, x := range []float32{448, 449, 464, 480, 1e6, float32(math.MaxFloat32), float32(math.Inf(1))} {
		if got := EncodeE4M3(x); got != 0x7e {
			t.Errorf("encode(%v) = %#02x, want 0x7e", x, got)
		}
		if got := EncodeE4M3(-x); got != 0xfe {
			t.Errorf("encode(%v) = %#02x, want 0xfe", -x, got)
		}
	}
	if got := EncodeE4M3(float32(math.NaN())); got != 0x7f {
		t.Errorf("encode(NaN) = %#02x, want 0x7f", got)
	}
}

// TestE4M3AgainstNearestScan checks every bf16 input (the kernels' input
// domain) against a linear scan for the nearest code: an implementation
// sharing nothing with the encoder's table lookup.
func TestE4M3AgainstNearestScan(t *testing.T) {
	for b := range 1 << 16 {
		x := BF16ToFloat32(uint16(b))
		if x != x {
			continue
		}
		want := nearestScan(x)
		if got := EncodeE4M3(x); got != want {
			t.Fatalf("encode(%v = bf16 %#04x) = %#02x, nearest scan says %#02x", x, b, got, want)
		}
	}
}

func nearestScan(x float32) byte {
	a := math.Abs(float64(x))
	best, bestD := 0, math.Inf(1)
	for c := 0; c <= 0x7e; c++ {
		d := math.Abs(float64(DecodeE4M3(byte(c))) - a)
		if d < bestD || (d == bestD && c%2 == 0) {
			best, bestD = c, d
		}
	}
	if a >= E4M3Max {
		best = 0x7e
	}
	if math.Signbit(float64(x)) {
		return 0x80 | byte(best)
	}
	return byte(best)
}

func TestBF16RoundTrip(t *testing.T) {
	for b := range 1 << 16 {
		f := BF16ToFloat32(uint16(b))
		got := Float32ToBF16(f)
		if f == f && got != uint16(b) {
			t.Fatalf("bf16 %#04x -> %v -> %#04x", b, f, got)
		}
		if f != f && BF16ToFloat32(got) == BF16ToFloat32(got) {
			t.Fatalf("bf16 NaN %#04x lost its NaN-ness: %#04x", b, got)
		}
	}
	if got := Float32ToBF16(1 + 1.0/256); got != 0x3f80 {
		t.Errorf("1+2^-8 rounds to %#04x, want 0x3f80 (tie to even)", got)
	}
}
