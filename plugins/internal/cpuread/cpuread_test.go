package cpuread

import (
	"encoding/binary"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/kvharness/kvharness/harness/sdk"
	"github.com/kvharness/kvharness/harness/sdk/read"
	"github.com/kvharness/kvharness/plugins/internal/cpustore"
	"github.com/kvharness/kvharness/plugins/internal/fp8"
)

// TestE4M3ByDefinition checks every code against the format's formula,
// computed in float64, and that the plugins' encoder inverts it.
func TestE4M3ByDefinition(t *testing.T) {
	for c := range 256 {
		sign, e, m := 1.0, (c>>3)&0xf, c&7
		if c&0x80 != 0 {
			sign = -1
		}
		got := E4M3(byte(c))
		if e == 0xf && m == 7 {
			if got == got {
				t.Errorf("code %#02x = %v, want NaN", c, got)
			}
			continue
		}
		want := sign * float64(m) / 8 * math.Ldexp(1, -6)
		if e != 0 {
			want = sign * (1 + float64(m)/8) * math.Ldexp(1, e-7)
		}
		if float64(got) != want || math.Signbit(float64(got)) != (sign < 0) {
			t.Errorf("code %#02x = %v, want %v", c, got, want)
		}
		if back := fp8.FromFloat32(got); back != byte(c) && !(c == 0x80 && back == 0) {
			t.Errorf("encode(decode(%#02x)) = %#02x", c, back)
		}
	}
}

func TestBetterOrder(t *testing.T) {
	nan := float32(math.NaN())
	got := []Scored{{5, 1}, {3, nan}, {9, 2}, {2, 1}, {7, float32(math.Copysign(0, -1))}, {4, 0}, {1, -3}}
	slices.SortFunc(got, Better)
	want := []int64{9, 2, 5, 4, 7, 1, 3} // higher first; 1 = 1 and -0 = +0 go to the lower slot; NaN last
	for i, s := range got {
		if s.Slot != want[i] {
			t.Fatalf("order %v; want slots %v", got, want)
		}
	}
}

// pool builds keys of the given geometry: bf16 rows, or fp8 codes and
// scales, random but finite.
func randomPool(rng *rand.Rand, n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(rng.Uint32() & 0x3f) // small exponents: finite bf16 and e4m3, no NaN code
	}
	return b
}

// TestScoresAgainstFloat64: float32 scores stay within the D·2^-23
// relative error of a float64 dot product of the same decoded key.
func TestScoresAgainstFloat64(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	const d, p = 64, 16
	mem := randomPool(rng, 64*(d+4)*p)
	paged := cpustore.Paged{P: p, ValueBytes: d, ScaleBytes: 4, PageBytes: (d + 4) * p}
	for slot := range int64(64) {
		_, sat := paged.Offsets(slot)
		binary.LittleEndian.PutUint32(mem[sat:], math.Float32bits(rng.Float32()))
	}
	q := make([]float32, d)
	for i := range q {
		q[i] = float32(rng.NormFloat64())
	}
	for slot := range int64(64) {
		for _, k := range []Keys{BF16{Pool: mem, Geometry: cpustore.Rows{Stride: 2 * d, ValueBytes: 2 * d}}, FP8{Pool: mem, Values: paged, Scales: paged}} {
			want, mag := reference(k, q, slot)
			if got := float64(k.Score(q, slot)); math.Abs(got-want) > float64(d)*math.Ldexp(1, -23)*mag {
				t.Fatalf("%T slot %d: score %v, float64 %v", k, slot, got, want)
			}
		}
	}
}

// reference decodes the key element by element, without Score's code.
func reference(k Keys, q []float32, slot int64) (dot, mag float64) {
	var key []float64
	switch k := k.(type) {
	case BF16:
		at, _ := k.Geometry.Offsets(slot)
		for i := range q {
			key = append(key, float64(math.Float32frombits(uint32(binary.LittleEndian.Uint16(k.Pool[at+2*i:]))<<16)))
		}
	case FP8:
		at, _ := k.Values.Offsets(slot)
		_, sat := k.Scales.Offsets(slot)
		scale := float64(math.Float32frombits(binary.LittleEndian.Uint32(k.Pool[sat:])))
		for i := range q {
			key = append(key, float64(E4M3(k.Pool[at+i]))*scale)
		}
	}
	for i, x := range key {
		dot += float64(q[i]) * x
		mag += math.Abs(float64(q[i]) * x)
	}
	return dot, mag
}

// TestRunPadsAndSpans: short lists are padded with -1 and NaN, and a span
// decides what is read.
func TestRunPadsAndSpans(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	const d = 16
	c := &read.Call{Pool: sdk.Pool{Slots: 32, Layout: sdk.Layout{Name: "bf16", HeadDim: d, PageSize: 4}},
		Requests: 2, K: 3, Queries: make([]uint16, 2*d), Indptr: []int64{0, 2, 5}, Tokens: []int64{4, 9, 1, 2, 3},
		OutSlots: make([]int64, 6), OutScores: make([]float32, 6)}
	for i := range c.Queries {
		c.Queries[i] = uint16(rng.Uint32() & 0x3fff)
	}
	keys := BF16{Pool: randomPool(rng, 32*2*d), Geometry: cpustore.Rows{Stride: 2 * d, ValueBytes: 2 * d}}
	Run(c, keys, ListSpan)
	if s := c.OutSlots[2]; s != -1 || c.OutScores[2] == c.OutScores[2] {
		t.Errorf("request 0 rank 2: slot %d score %v, want padding", s, c.OutScores[2])
	}
	for _, s := range c.OutSlots[:2] {
		if s != 4 && s != 9 {
			t.Errorf("request 0 returned slot %d from outside its list", s)
		}
	}
	all := func(c *read.Call, r int) (int64, int64) { return 0, int64(len(c.Tokens)) }
	if top := Request(c, keys, all, 0); len(top) != 3 {
		t.Errorf("a span of every token gave %d results", len(top))
	}
}
