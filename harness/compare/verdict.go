package compare

// A Verdict is what a comparison says of one cell.
type Verdict string

// Verdicts. A cell is judged once, on one unit (Options.Metric), with the
// other units as evidence. Only Slower fails a nightly job; an Unsure cell
// that lacks data (Cell.Lacks) fails it under --strict.
const (
	Slower    Verdict = "slower"    // significant, past the threshold, on its own and net of its floor's drift
	Faster    Verdict = "faster"    // the same, the other way
	Same      Verdict = "same"      // not significant, or within the threshold
	Unsure    Verdict = "unsure"    // too little data to judge (Lacks says what), or slower in one night but not in its rerun
	Reference Verdict = "reference" // a floor measured beside the kernels (copy, empty launch): shown, not judged
	Missing   Verdict = "missing"   // in one file only
)

// verdicts is the order cells are listed and counted in.
var verdicts = []Verdict{Slower, Unsure, Faster, Same, Reference, Missing}

// decide is the verdict of a tested change: significance first, then
// size, then direction (better is -1 lower, +1 higher).
func decide(p, alpha, deltaPct, threshold float64, better int) Verdict {
	if p >= alpha || abs(deltaPct) <= 100*threshold || better == 0 {
		return Same
	}
	if (deltaPct > 0) == (better > 0) {
		return Faster
	}
	return Slower
}

func abs(x float64) float64 {
	if x < 0 {
		return -x
	}
	return x
}

// minUTestP is the smallest two-sided p-value a Mann–Whitney U-test can
// give for samples of n1 and n2 values (no ties): 2 / C(n1+n2, n1).
func minUTestP(n1, n2 int) float64 {
	c := 1.0
	for i := 1; i <= n1; i++ {
		c = c * float64(n2+i) / float64(i)
	}
	return min(1, 2/c)
}

// runsNeeded is the fewest runs a side (with as many on the other) for a
// U-test to reach p < alpha.
func runsNeeded(alpha float64) int {
	n := 1
	for minUTestP(n, n) >= alpha && n < 100 {
		n++
	}
	return n
}
