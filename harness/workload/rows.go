package workload

import (
	"math"
	"math/rand/v2"

	"github.com/kvharness/kvharness/harness/layout"
)

// RowKind picks how a row's elements are drawn.
type RowKind uint8

// Row kinds: the value classes real activations hold. Garbage is for
// padded rows, whose data a padding-aware kernel never reads; non-finite
// rows are valid only where the layout's recipe says what becomes of
// them (a declared layout.NonFinite policy, or a bf16 copy).
const (
	RowZero    RowKind = iota // all zeros: exercises the fp8 scale floor
	RowNormal                 // N(0,1) times a random power of two
	RowTiny                   // |x| below 1e-4: the floor decides the scale
	RowOutlier                // small values and one large one
	RowGarbage                // random bit patterns, NaN and Inf included
	// RowSubnormal is bf16 subnormals of both signs, a few tiny normals
	// among them: a kernel that flushes denormals to zero loses them.
	RowSubnormal
	// RowSignedZero is +0 and -0, both: a kernel that writes zero rows
	// as +0 (a fast path, fabs) loses the sign.
	RowSignedZero
	// RowMaxFinite is the largest finite bf16 magnitudes and their
	// neighbours among large values: arithmetic on them that is not
	// careful overflows.
	RowMaxFinite
	// RowBoundary is values on the rounding boundaries of e4m3, e5m2 and
	// e2m1 (the midpoints between codes, ties to even) and one bf16 ulp
	// either side, times a power of two 2^k, with one element ±448·2^k so
	// that an e4m3 scale is exactly 2^k: a kernel that rounds ties the
	// wrong way, or any way but to nearest, misses some.
	RowBoundary
	// RowNonFinite is normal values with ±Inf and NaNs (quiet, signalling
	// payloads, negative) among them.
	RowNonFinite
)

var rowKinds = Names[RowKind]{Names: []string{"zero", "normal", "tiny", "outlier", "garbage", "subnormal", "signed-zero",
	"max-finite", "boundary", "non-finite"}, Unknown: "rowkind(%d)", Noun: "row kind"}

// Finite reports whether rows of kind k hold finite values only.
func (k RowKind) Finite() bool { return k != RowGarbage && k != RowNonFinite }

func (k RowKind) String() string { return rowKinds.String(k) }

// MarshalText implements encoding.TextMarshaler.
func (k RowKind) MarshalText() ([]byte, error) { return []byte(k.String()), nil }

// UnmarshalText implements encoding.TextUnmarshaler.
func (k *RowKind) UnmarshalText(b []byte) error { return rowKinds.Parse(b, k) }

// Row is one input row, as a recipe.
type Row struct {
	Kind RowKind `json:"kind"`
	Seed uint64  `json:"seed"`
}

// Data returns the row's headDim bf16 elements.
func (r Row) Data(headDim int) []uint16 {
	out := make([]uint16, headDim)
	r.Fill(out)
	return out
}

// Fill writes the row's elements into out.
func (r Row) Fill(out []uint16) {
	rng := rand.New(rand.NewPCG(r.Seed, uint64(r.Kind)))
	switch r.Kind {
	case RowZero:
		clear(out)
	case RowNormal:
		scale := math.Ldexp(1, rng.IntN(24)-12)
		for i := range out {
			out[i] = layout.Float32ToBF16(float32(rng.NormFloat64() * scale))
		}
	case RowTiny:
		for i := range out {
			out[i] = layout.Float32ToBF16(float32((rng.Float64()*2 - 1) * 9e-5))
		}
	case RowOutlier:
		for i := range out {
			out[i] = layout.Float32ToBF16(float32(rng.NormFloat64() * 1e-2))
		}
		out[rng.IntN(len(out))] = layout.Float32ToBF16(float32((rng.Float64() + 0.5) * 1e4))
	case RowSubnormal:
		fillSubnormal(rng, out)
	case RowSignedZero:
		for i := range out {
			out[i] = uint16(rng.IntN(2)) << 15
		}
		out[rng.IntN(len(out))] = 0x8000 // -0 always
	case RowMaxFinite:
		fillMaxFinite(rng, out)
	case RowBoundary:
		fillBoundary(rng, out)
	case RowNonFinite:
		fillNonFinite(rng, out)
	default:
		for i := range out {
			out[i] = uint16(rng.Uint32())
		}
	}
}
