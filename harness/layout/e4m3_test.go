package layout

import (
	"fmt"
	"math"
	"math/rand"
	"os"
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

// TestE4M3AgainstSearch holds the encoder, which works on bits, to the
// definition on float32 quotients, not only bf16 inputs: the nearest code
// found by search over the value table, ties to the even code. Every
// sign, exponent and top 16 mantissa bits, with low bits that put each
// value on, beside and between the rounding boundaries; every float32
// with KVHARNESS_FULL=1.
func TestE4M3AgainstSearch(t *testing.T) {
	t.Parallel()
	check := func(t *testing.T, u uint32) {
		x := math.Float32frombits(u)
		if got, want := EncodeE4M3(x), encodeBySearch(x); got != want {
			t.Fatalf("encode(%v = %#08x) = %#02x, search says %#02x", x, u, got, want)
		}
		if got, want := encodeE4M3Unsaturated(x), unsaturatedBySearch(x); got != want {
			t.Fatalf("unsaturated encode(%v = %#08x) = %#02x, search says %#02x", x, u, got, want)
		}
	}
	if os.Getenv("KVHARNESS_FULL") != "" {
		for _, sign := range []uint32{0, 1 << 31} {
			t.Run(fmt.Sprintf("sign=%d", sign>>31), func(t *testing.T) {
				t.Parallel()
				for u := range uint32(1 << 31) {
					check(t, sign|u)
				}
			})
		}
		return
	}
	for hi := uint32(0); hi < 1<<16; hi++ {
		for _, lo := range []uint32{0, 1, 0x5a5a, 0x7fff, 0x8000, 0xffff} {
			check(t, hi<<16|lo)
		}
	}
}

// encodeBySearch is EncodeE4M3 by its definition: the positive codes are
// increasing in value, so take the last one not above |x|, then pick
// between it and its successor, ties to the even code.
func encodeBySearch(x float32) byte {
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

// unsaturatedBySearch is encodeE4M3Unsaturated by its definition: NaN
// past the last rounding boundary, the saturating encoding below it.
func unsaturatedBySearch(x float32) byte {
	if a := math.Abs(float64(x)); a > e4m3Overflow {
		if math.Signbit(float64(x)) {
			return 0x80 | e4m3NaN
		}
		return e4m3NaN
	}
	return encodeBySearch(x)
}

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

// TestAmaxAgainstFloats holds Amax, which compares bits, to a running
// maximum of float magnitudes that skips NaNs, on groups drawn from every
// bf16 pattern (NaNs, infinities and both zeros included).
func TestAmaxAgainstFloats(t *testing.T) {
	rng := rand.New(rand.NewSource(1))
	for range 20000 {
		group := make([]uint16, 1+rng.Intn(16))
		for i := range group {
			group[i] = uint16(rng.Intn(1 << 16))
			if rng.Intn(4) == 0 { // the special patterns, often
				group[i] = []uint16{0x7f80, 0xff80, 0x7fc0, 0xffff, 0x8000, 0, 0x7f7f}[rng.Intn(7)]
			}
		}
		var want float64
		for _, e := range group {
			if a := math.Abs(float64(BF16ToFloat32(e))); a > want {
				want = a
			}
		}
		if got := Amax(group); float64(got) != want || math.Signbit(float64(got)) {
			t.Fatalf("Amax(%#04x) = %v, want %v", group, got, want)
		}
	}
}
