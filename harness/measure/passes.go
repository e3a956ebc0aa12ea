package measure

import (
	"fmt"
	"math"
	"time"

	"github.com/montanaflynn/stats"
)

// PerPass is the share of c that one of passes passes over a matrix takes:
// the sample counts and times divided between the passes (counts rounded
// up), the noise target kept. A cell sampled in passes short runs meets c
// as a whole when each pass meets its share.
func (c Criterion) PerPass(passes int) Criterion {
	c = c.WithDefaults()
	if passes <= 1 {
		return c
	}
	p := time.Duration(passes)
	c.MinSamples = max(ceilDiv(c.MinSamples, passes), 2)
	c.MaxSamples = max(ceilDiv(c.MaxSamples, passes), c.MinSamples)
	c.MinTime /= p
	c.TimeLimit /= p
	return c
}

func ceilDiv(a, b int) int { return (a + b - 1) / b }

// Combine is the stop reason of a cell measured in runs, one reason per
// run, under the cell's criterion c: converged when every run converged,
// else the first run's rule that did not; samples, measured and elapsed
// times summed; noise the cell's, over all its samples (pass pooled). It
// says how many runs converged.
func Combine(runs []StopReason, c Criterion, pooledNoise float64) StopReason {
	out := StopReason{Kind: StopConverged, Criterion: c.WithDefaults(), Noise: pooledNoise, Runs: len(runs)}
	for _, r := range runs {
		out.Samples += r.Samples
		out.Measured += r.Measured
		out.Elapsed += r.Elapsed
		if r.Kind == StopConverged {
			out.ConvergedRuns++
		} else if out.Kind == StopConverged {
			out.Kind, out.Bad = r.Kind, r.Bad
		}
	}
	if len(runs) == 0 {
		out.Kind = ""
	}
	return out
}

// Quantile is the q-quantile (0 < q < 1) of samples, interpolated as
// Summarize's percentiles are (type 7). samples is not modified.
func Quantile(samples []float64, q float64) (float64, error) {
	if err := validate(samples); err != nil {
		return 0, err
	}
	if !(q > 0 && q < 1) {
		return 0, fmt.Errorf("quantile %v: want 0 < q < 1 (0.5 is the median, 0.99 the p99)", q)
	}
	return stats.Percentile(stats.Float64Data(samples), 100*q)
}

// Resolvable reports whether n samples resolve the q-quantile: the
// quantile of fewer than 1/(1-q) samples (1/q below the median) is an
// interpolation into the sample's extreme, not a tail. A p99 needs 100
// samples, a p99.9 1000.
func Resolvable(n int, q float64) bool {
	tail := math.Min(q, 1-q)
	return tail > 0 && float64(n) >= math.Round(1/tail)
}
