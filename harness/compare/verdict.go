package compare

// A Verdict is the outcome of comparing one row.
type Verdict string

// Verdicts. Only Regression should fail a nightly job.
const (
	Regression   Verdict = "regression"           // significant and worse than the threshold
	Improvement  Verdict = "improvement"          // significant and better than the threshold
	Unchanged    Verdict = "unchanged"            // not significant, or within the threshold
	Changed      Verdict = "changed"              // significant, beyond the threshold, unit direction unknown
	Insufficient Verdict = "insufficient samples" // too few values for the U-test to reach alpha
	Missing      Verdict = "missing"              // present in only one file
	Reference    Verdict = "reference"            // a floor measured beside the kernels (copy, empty launch): shown, not judged
	Derived      Verdict = "derived"              // a rate of the samples a time row judges: shown, judged there
	Unconfirmed  Verdict = "unconfirmed"          // a regression a rerun of the same code did not repeat (see Report.Confirm)
)

// verdicts is the order verdicts are counted and listed in.
var verdicts = []Verdict{Regression, Unconfirmed, Improvement, Changed, Unchanged, Reference, Derived, Insufficient, Missing}

// decide is the verdict for a tested row: significance first, then
// size, then direction (better is -1 lower, +1 higher, 0 unknown).
func decide(p, alpha, deltaPct, threshold float64, better int) Verdict {
	if p >= alpha || abs(deltaPct) <= 100*threshold {
		return Unchanged
	}
	if better == 0 {
		return Changed
	}
	if (deltaPct > 0) == (better > 0) {
		return Improvement
	}
	return Regression
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
