package oracle

import "slices"

// Violation kinds of a read. A read kernel is read-only and answers with
// its out windows alone; these say how one did not:
//
//	readonly  a byte it was given to read changed: a key the harness
//	          wrote into the pool, or an input in staging (queries, list
//	          bounds, tokens)
//	scratch   a byte it had no reason to touch changed: a pool byte no key
//	          of the case occupies, a guard byte, or a staging byte outside
//	          the inputs and the out windows (the pool used as scratch
//	          space and not restored, a stray write)
//	score     a returned score is outside the tolerance of the reference
//	          score of its slot (see ReadOptions)
//	result    the returned top k is not the reference's: a slot outside the
//	          request's list, a slot twice, too few or too many results,
//	          padding other than slot -1 with a NaN score, results out of
//	          order, a better token left out (beyond the tolerance), or a
//	          tie broken toward the higher slot
const (
	ReadOnly Kind = "readonly"
	Scratch  Kind = "scratch"
	Score    Kind = "score"
	Result   Kind = "result"
)

// ReadKinds lists the read kinds in report order: damage to the pool
// first, then wrong scores, then what wrong scores or a wrong walk of the
// lists do to the result.
var ReadKinds = []Kind{ReadOnly, Scratch, Score, Result}

// The read kinds join Kinds ahead of the kinds that compare runs, so a
// read that is wrong and also nondeterministic leads with what is wrong.
func init() {
	at := slices.Index(Kinds, Determinism)
	if at < 0 {
		at = len(Kinds)
	}
	Kinds = slices.Insert(Kinds, at, ReadKinds...)
}
