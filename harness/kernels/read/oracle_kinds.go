package read

import "github.com/kvharness/kvharness/harness/oracle"

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
//	          score of its slot (see Options)
//	result    the returned top k is not the reference's: a slot outside the
//	          request's list, a slot twice, too few or too many results,
//	          padding other than slot -1 with a NaN score, results out of
//	          order, a better token left out (beyond the tolerance), or a
//	          tie broken toward the higher slot
const (
	ReadOnly oracle.Kind = "readonly"
	Scratch  oracle.Kind = "scratch"
	Score    oracle.Kind = "score"
	TopK     oracle.Kind = "result"
)

// Kinds lists a read's violation kinds in report order: the plugin's
// declared geometry, damage to the pool, then wrong scores, then what
// wrong scores or a wrong walk of the lists do to the result, and last
// whether two runs agreed: a read that is wrong and also nondeterministic
// leads with what is wrong.
var Kinds = []oracle.Kind{oracle.Geometry, ReadOnly, Scratch, Score, TopK, oracle.Determinism}
