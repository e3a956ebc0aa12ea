package workload

import (
	"math"
	"testing"

	"github.com/kvharness/kvharness/harness/layout"
)

// TestValueClasses: each class's rows hold what its doc says, over many
// seeds and the head dims a run draws.
func TestValueClasses(t *testing.T) {
	subnormal := func(b uint16) bool { return b&0x7f80 == 0 && b&0x7f != 0 }
	nonFinite := func(b uint16) bool { return b&0x7f80 == 0x7f80 }
	for seed := range uint64(200) {
		for _, d := range []int{8, 120, 576} {
			sub := Row{Kind: RowSubnormal, Seed: seed}.Data(d)
			if count(sub, subnormal) < d/2 || count(sub, func(b uint16) bool { return b == 0x8000 }) == 0 {
				t.Fatalf("subnormal row (seed %d, D=%d): %d subnormals, no -0? %x", seed, d, count(sub, subnormal), sub)
			}
			zero := Row{Kind: RowSignedZero, Seed: seed}.Data(d)
			if count(zero, func(b uint16) bool { return b&0x7fff != 0 }) > 0 || count(zero, func(b uint16) bool { return b == 0x8000 }) == 0 {
				t.Fatalf("signed-zero row (seed %d): %x", seed, zero)
			}
			big := Row{Kind: RowMaxFinite, Seed: seed}.Data(d)
			if count(big, func(b uint16) bool { return b&0x7fff == bf16MaxFinite }) == 0 || count(big, nonFinite) > 0 {
				t.Fatalf("max-finite row (seed %d): %x", seed, big)
			}
			nf := Row{Kind: RowNonFinite, Seed: seed}.Data(d)
			if count(nf, nonFinite) == 0 {
				t.Fatalf("non-finite row (seed %d): none", seed)
			}
			checkBoundary(t, Row{Kind: RowBoundary, Seed: seed}.Data(d))
		}
	}
}

// checkBoundary: the row's amax is 448·2^k, so its e4m3 scale is 2^k, and
// a share of its elements lie exactly on an e4m3 rounding boundary.
func checkBoundary(t *testing.T, row []uint16) {
	t.Helper()
	amax := float64(layout.Amax(row))
	frac, exp := math.Frexp(amax / 448)
	if frac != 0.5 {
		t.Fatalf("boundary row: amax %g is not 448·2^k: %x", amax, row)
	}
	s := math.Ldexp(1, exp-1)
	ties := 0
	for _, b := range row {
		y := math.Abs(float64(layout.BF16ToFloat32(b))) / s
		for c := byte(0); c < 0x7e; c++ {
			if mid := (float64(layout.DecodeE4M3(c)) + float64(layout.DecodeE4M3(c+1))) / 2; mid == y {
				ties++
				break
			}
		}
	}
	if len(row) >= 64 && ties < len(row)/8 {
		t.Fatalf("boundary row: %d of %d elements on an e4m3 tie", ties, len(row))
	}
}

func count(xs []uint16, f func(uint16) bool) int {
	n := 0
	for _, x := range xs {
		if f(x) {
			n++
		}
	}
	return n
}
