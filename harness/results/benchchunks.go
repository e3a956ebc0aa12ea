package results

import "github.com/kvharness/kvharness/harness/measure"

// chunkSummaries summarises each of up to lines contiguous chunks of c's
// samples. A cell without raw samples yields its Summary alone.
func chunkSummaries(c *Cell, lines int) ([]measure.Summary, error) {
	if len(c.Samples) == 0 {
		return []measure.Summary{c.Summary}, nil
	}
	var out []measure.Summary
	for _, ch := range chunks(c.Samples, lines) {
		s, err := measure.Summarize(ch)
		if err != nil {
			return nil, err
		}
		out = append(out, s)
	}
	return out, nil
}

// chunks splits xs into min(k, len(xs)) contiguous chunks whose sizes
// differ by at most one.
func chunks(xs []float64, k int) [][]float64 {
	k = min(k, len(xs))
	out := make([][]float64, k)
	for i := range k {
		out[i] = xs[i*len(xs)/k : (i+1)*len(xs)/k]
	}
	return out
}

type metric struct {
	value float64
	unit  string
}

// lineMetrics are the values of one result line. Rates are left out when
// their inputs are missing (no bytes counted, no copy measured, or a zero
// median time).
func lineMetrics(c *Cell, s measure.Summary) []metric {
	m := []metric{{s.P50, UnitTime}, {s.P50, UnitP50}, {s.P99, UnitP99}, {s.P999, UnitP999}}
	if gbps, err := measure.GBPerSecond(c.BytesPerLaunch, s.P50); err == nil && gbps > 0 {
		m = append(m, metric{gbps, UnitGBps})
	}
	if tps, err := measure.TokensPerSecond(c.Tokens, s.P50); err == nil {
		m = append(m, metric{tps, UnitTokens})
	}
	if r, err := measure.CopyRatio(s.P50, c.CopyNs); err == nil {
		m = append(m, metric{r, UnitCopyRatio})
	}
	return m
}
