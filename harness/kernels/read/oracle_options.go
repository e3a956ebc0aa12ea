package read

import (
	"math"

	"github.com/kvharness/kvharness/harness/layout"
)

// Options set how close a read's result must be to the reference.
//
// Scores. The reference score of a token is q·k in float64, from the key
// as the pool holds it: bf16 elements exactly, e4m3 codes as
// DecodeE4M3(code) × scale (exact in float64). A returned float32 score s
// passes when
//
//	|s − ref| ≤ ScoreTol · Σ_d |q_d · k_d| + ScoreAbsTol
//
// The default ScoreTol, (D+2) · 2^-23, is twice the worst-case error of
// summing D float32 products in any order (D−1 roundings) plus rounding
// a dequantized element and the scale factor: any correct float32 kernel
// passes, whatever order it sums in, and a key read from the wrong place
// or with the wrong scale does not. ScoreAbsTol covers products that
// underflow to float32 subnormals.
//
// Ranking. Two tokens whose reference scores are closer than the sum of
// their tolerances are a near tie: a correct kernel may rank them either
// way. Otherwise the better token must be returned first, and a token left
// out must not be better than one returned. Tokens with bit-identical keys
// score bit-identically in any kernel that scores a token the same
// wherever it sits in a list; of those, the lower slot ranks first.
//
// Exact and quantized layouts. On a layout without quantized fields (bf16)
// the returned set and order must be the reference's, near ties aside. On
// a quantized layout the returned set must have a Jaccard index with the
// reference top k of at least Jaccard, counting a returned token that a
// near tie explains as a match; order and scores are checked as above.
//
// Non-finite values. Under NonFinite layout.Contained, a request whose
// query or keys hold ±Inf or NaN is judged for form alone (see Policy);
// otherwise every request is judged as above.
type Options struct {
	ScoreTol    float64 // relative score tolerance; 0: DefaultScoreTol(D)
	ScoreAbsTol float64 // absolute score tolerance; 0: DefaultScoreAbsTol
	Jaccard     float64 // quantized layouts: least top-k Jaccard index; 0: DefaultJaccard
	// NonFinite is the kernel's declared read policy (Target.NonFinite).
	NonFinite layout.NonFinite
}

// DefaultJaccard is the least Jaccard index of a quantized read's top k
// with the reference's: the incident's read-kernel check passed at 0.988.
const DefaultJaccard = 0.98

// DefaultScoreAbsTol is the absolute score tolerance.
const DefaultScoreAbsTol = 1e-30

// DefaultScoreTol is the relative score tolerance for head dimension d.
func DefaultScoreTol(d int) float64 { return float64(d+2) * math.Ldexp(1, -23) }

func (o Options) withDefaults(d int) Options {
	if o.ScoreTol == 0 {
		o.ScoreTol = DefaultScoreTol(d)
	}
	if o.ScoreAbsTol == 0 {
		o.ScoreAbsTol = DefaultScoreAbsTol
	}
	if o.Jaccard == 0 {
		o.Jaccard = DefaultJaccard
	}
	return o
}
