package read

import (
	"math"
	"math/rand/v2"

	"github.com/kvharness/kvharness/harness/layout"
	"github.com/kvharness/kvharness/harness/workload"
)

// VecKind picks how a read case's key or query vector is drawn.
type VecKind uint8

// Vector kinds. Keys take any kind; queries never take huge, so that no
// dot product comes near float32's range (a huge key times the largest
// query stays below 2^90). The value classes a store row also has
// (subnormal, signed zero, rounding boundaries) draw as that row does;
// the largest finite values and ±Inf and NaN are a store's only: a
// read's scores must stay finite to be ranked.
const (
	VecZero       VecKind = iota // all zeros: every score 0, ties everywhere
	VecNormal                    // N(0,1) times a random power of two, as RowNormal
	VecTiny                      // |x| below 1e-4: the fp8 scale floor decides
	VecOutlier                   // small values and one large one
	VecHuge                      // N(0,1) times 2^40..2^59
	VecSubnormal                 // bf16 subnormals, as RowSubnormal: a kernel that flushes them scores 0
	VecSignedZero                // ±0, as RowSignedZero
	VecBoundary                  // e4m3, e5m2 and e2m1 rounding boundaries, as RowBoundary
	numVecKinds
)

var vecKinds = workload.Names[VecKind]{Names: []string{"zero", "normal", "tiny", "outlier", "huge", "subnormal", "signed-zero",
	"boundary"}, Unknown: "veckind(%d)", Noun: "vector kind"}

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
	VecBoundary: workload.RowBoundary}

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
