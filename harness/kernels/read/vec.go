package read

import (
	"math"
	"math/rand/v2"

	"github.com/kvharness/kvharness/harness/layout"
	"github.com/kvharness/kvharness/harness/workload"
)

// VecKind picks how a read case's key or query vector is drawn.
type VecKind uint8

// Vector kinds. Keys take any kind; queries never take huge or
// max-finite, so that no dot product comes near float32's range (a huge
// key times the largest query stays below 2^90). A max-finite key is
// scored only by queries that keep every float32 score finite (see
// ScoresMaxFinite). The value classes a store row also has (subnormal,
// signed zero, the largest finite values, rounding boundaries, ±Inf and
// NaN) draw as that row does. Non-finite keys and queries go only to a
// kernel that declares what it does with them (Policy): a request that
// holds one is judged for form alone, every other request in full.
const (
	VecZero       VecKind = iota // all zeros: every score 0, ties everywhere
	VecNormal                    // N(0,1) times a random power of two, as RowNormal
	VecTiny                      // |x| below 1e-4: the fp8 scale floor decides
	VecOutlier                   // small values and one large one
	VecHuge                      // N(0,1) times 2^40..2^59
	VecSubnormal                 // bf16 subnormals, as RowSubnormal: a kernel that flushes them scores 0
	VecSignedZero                // ±0, as RowSignedZero
	VecBoundary                  // e4m3, e5m2 and e2m1 rounding boundaries, as RowBoundary
	VecMaxFinite                 // ±3.39e38 (bf16's largest finite) and 2^100-scale values, as RowMaxFinite; keys only
	VecNonFinite                 // normal values with one to three ±Inf or NaN, as RowNonFinite; under a declared policy only
	numVecKinds
)

var vecKinds = workload.Names[VecKind]{Names: []string{"zero", "normal", "tiny", "outlier", "huge", "subnormal", "signed-zero",
	"boundary", "max-finite", "non-finite"}, Unknown: "veckind(%d)", Noun: "vector kind"}

func (k VecKind) String() string { return vecKinds.String(k) }

// MarshalText implements encoding.TextMarshaler.
func (k VecKind) MarshalText() ([]byte, error) { return []byte(k.String()), nil }

// UnmarshalText implements encoding.TextUnmarshaler.
func (k *VecKind) UnmarshalText(b []byte) error { return vecKinds.Parse(b, k) }

// Vec is a key or query vector, as a recipe.
type Vec struct {
	Kind VecKind `json:"kind"`
	Seed uint64  `json:"seed"`
}

// vecRowKinds maps the kinds a store row also has to its RowKind.
var vecRowKinds = map[VecKind]workload.RowKind{VecZero: workload.RowZero, VecNormal: workload.RowNormal, VecTiny: workload.RowTiny,
	VecOutlier: workload.RowOutlier, VecSubnormal: workload.RowSubnormal, VecSignedZero: workload.RowSignedZero,
	VecBoundary: workload.RowBoundary, VecMaxFinite: workload.RowMaxFinite, VecNonFinite: workload.RowNonFinite}

// ScoresMaxFinite reports whether a query of kind k keeps every float32
// score of a max-finite key finite: its elements are zeros, subnormals or
// below 1e-4, so every product and partial sum, at most Σ|q_d·k_d| <
// 1e-4 · 3.39e38 · 8192 (layout.MaxHeadDim) ≈ 2.8e38, stays below
// float32's 3.40e38, whatever the order of the sum.
func (k VecKind) ScoresMaxFinite() bool {
	return k == VecZero || k == VecTiny || k == VecSubnormal || k == VecSignedZero
}

// Data returns the vector's headDim bf16 elements. Kinds a store row also
// has draw exactly what that row kind draws.
func (v Vec) Data(headDim int) []uint16 {
	if k, ok := vecRowKinds[v.Kind]; ok {
		return workload.Row{Kind: k, Seed: v.Seed}.Data(headDim)
	}
	out := make([]uint16, headDim)
	rng := rand.New(rand.NewPCG(v.Seed, uint64(v.Kind)))
	for i := range out {
		out[i] = layout.Float32ToBF16(float32(math.Ldexp(rng.NormFloat64(), 40+rng.IntN(20))))
	}
	return out
}

// KeyData is the key's elements as the harness writes them into a pool
// of layout l: Data, except that a max-finite key's magnitudes are cut to
// the largest finite value l stores, the largest bf16 whose stored form
// reads back within float32's range. In a bf16 pool that is bf16's own
// largest (3.39e38); where a power-of-two (ue8m0) scale would round it up
// to 2^120 and its code to 256, dequantized 2^128, infinite in float32, it
// is 448·2^119 (2.98e38).
func (v Vec) KeyData(l *layout.Layout) []uint16 {
	out := v.Data(l.HeadDim)
	if v.Kind != VecMaxFinite {
		return out
	}
	ceil := storedCeiling(l)
	for i, e := range out {
		if e&0x7fff > ceil {
			out[i] = e&0x8000 | ceil
		}
	}
	return out
}

// storedCeiling is the largest finite bf16 magnitude m such that a key of
// ±m elements reads back from l's records (DecodeKey) within float32's
// range. Fields the oracle does not decode read back as 0. A larger
// magnitude never reads back smaller, so m is found by bisection between
// 1.0, which every layout stores, and bf16's largest: at most 15 encodes
// of a row, and one where the largest itself is stored (a bf16 pool).
func storedCeiling(l *layout.Layout) uint16 {
	lo, hi := uint16(0x3f80), uint16(bf16MaxFinite) // lo is stored finite; the answer is in [lo, hi]
	if storedFinite(l, hi) {
		return hi
	}
	for hi-lo > 1 { // hi is not stored finite
		mid := lo + (hi-lo)/2
		if storedFinite(l, mid) {
			lo = mid
		} else {
			hi = mid
		}
	}
	return lo
}

const bf16MaxFinite = 0x7f7f

// storedFinite reports whether a key of elements ±m, alternating, reads
// back from l within float32's range.
func storedFinite(l *layout.Layout, m uint16) bool {
	row := make([]uint16, l.HeadDim)
	for i := range row {
		row[i] = uint16(i&1)<<15 | m
	}
	for _, x := range DecodeKey(l, l.Encode(row)) {
		if math.Abs(x) > math.MaxFloat32 {
			return false
		}
	}
	return true
}
