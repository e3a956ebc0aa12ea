package cpuread

import (
	"cmp"
	"slices"
)

// Scored is a token and its score.
type Scored struct {
	Slot  int64
	Score float32
}

// Better is the result order of the read contract: higher score first, a
// NaN score last, and of two equal scores (+0 and -0 are equal) the lower
// slot first. It is a strict weak order, so sorting by it is deterministic.
func Better(a, b Scored) int {
	an, bn := a.Score != a.Score, b.Score != b.Score
	switch {
	case an != bn:
		if an {
			return 1
		}
		return -1
	case !an && a.Score != b.Score:
		return cmp.Compare(b.Score, a.Score)
	}
	return cmp.Compare(a.Slot, b.Slot)
}

// TopK sorts scored in result order and returns its first k.
func TopK(scored []Scored, k int) []Scored {
	slices.SortFunc(scored, Better)
	return scored[:min(k, len(scored))]
}
