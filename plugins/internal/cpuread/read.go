package cpuread

import (
	"math"

	"github.com/kvharness/kvharness/harness/sdk/read"
	"github.com/kvharness/kvharness/plugins/internal/fp8"
)

// Span is which tokens of c a request reads, as indices into c.Tokens.
// The correct span is the request's list, Indptr[r] to Indptr[r+1].
type Span func(c *read.Call, r int) (lo, hi int64)

// ListSpan is the correct span.
func ListSpan(c *read.Call, r int) (int64, int64) { return c.Indptr[r], c.Indptr[r+1] }

// Request scores the tokens of request r's span and returns the top k.
func Request(c *read.Call, keys Keys, span Span, r int) []Scored {
	return TopK(Scores(c, keys, span, r), c.K)
}

// Scores scores the tokens of request r's span, in span order.
func Scores(c *read.Call, keys Keys, span Span, r int) []Scored {
	q := make([]float32, c.Pool.Layout.HeadDim)
	for i, e := range c.Query(r) {
		q[i] = fp8.BF16(e)
	}
	lo, hi := span(c, r)
	scored := make([]Scored, 0, hi-lo)
	for _, slot := range c.Tokens[lo:hi] {
		s := keys.Score(q, slot)
		if s == 0 {
			s = 0 // -0 becomes +0: equal scores compare equal, and print alike
		}
		scored = append(scored, Scored{slot, s})
	}
	return scored
}

// Write puts request r's result in the out windows, padding a short one
// with slot -1 and a NaN score.
func Write(c *read.Call, r int, top []Scored) {
	slots, scores := c.OutSlots[r*c.K:(r+1)*c.K], c.OutScores[r*c.K:(r+1)*c.K]
	for i := range slots {
		slots[i], scores[i] = -1, float32(math.NaN())
		if i < len(top) {
			slots[i], scores[i] = top[i].Slot, top[i].Score
		}
	}
}

// Run reads every request of c.
func Run(c *read.Call, keys Keys, span Span) {
	for r := range c.Requests {
		Write(c, r, Request(c, keys, span, r))
	}
}
