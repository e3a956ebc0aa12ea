package workload

import (
	"math"
	"math/rand/v2"

	"github.com/kvharness/kvharness/harness/layout"
)

// RowKind picks how a row's elements are drawn.
type RowKind uint8

// Row kinds. Valid rows are always finite; garbage is for padded rows,
// whose data a padding-aware kernel never reads.
const (
	RowZero    RowKind = iota // all zeros: exercises the fp8 scale floor
	RowNormal                 // N(0,1) times a random power of two
	RowTiny                   // |x| below 1e-4: the floor decides the scale
	RowOutlier                // small values and one large one
	RowGarbage                // random bit patterns, NaN and Inf included
)

var rowKinds = Names[RowKind]{Names: []string{"zero", "normal", "tiny", "outlier", "garbage"}, Unknown: "rowkind(%d)",
	Noun: "row kind"}

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
	default:
		for i := range out {
			out[i] = uint16(rng.Uint32())
		}
	}
}
