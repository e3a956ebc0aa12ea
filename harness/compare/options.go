package compare

import "cmp"

// Defaults for zero Options fields.
const (
	// DefaultAlpha is the U-test's level over runs: 0.01, which five runs
	// a side can reach (2/252) and which, on nights of unchanged code,
	// kept every cell of ten CPU nights the same (0.05 flagged two of
	// ten, bench/nights.sh).
	DefaultAlpha     = 0.01
	DefaultThreshold = 0.05
	// DefaultLatencyThreshold is for per-launch rows: on an H200 virtual
	// machine an unchanged rerun moved per-launch medians of small cells
	// by up to 36% (batched ones by under 15%, mostly the machine's drift).
	DefaultLatencyThreshold = 0.5
	DefaultConfidence       = 0.95
	// DefaultMetric is the unit cells are judged on: the median launch of
	// each run, robust to the stray slow launch a mean would carry.
	DefaultMetric = "p50-sec/op"
)

// Options configures a comparison. Zero fields take the defaults.
type Options struct {
	// Alpha is the U-test significance level: a change is significant
	// when p < Alpha.
	Alpha float64
	// Threshold is the smallest relative change of the medians that
	// counts as a regression or improvement, as a fraction (0.05 = 5%).
	Threshold float64
	// LatencyThreshold is Threshold for per-launch rows (tail latency),
	// judged net of their floor's drift.
	LatencyThreshold float64
	// Confidence is the level of the median's confidence interval.
	Confidence float64
	// Ignore lists name keys dropped before rows are matched, as
	// benchstat's -ignore does: with "variant", a run of a plugin's
	// variant compares against the baseline of the plugin itself.
	Ignore []string
	// Absolute judges each cell's own change. By default a kernel's cell
	// is judged net of the drift of the floor measured beside it in the
	// same night (see drift), and floors are not judged.
	Absolute bool
	// Metric is the tidied unit a cell is judged on (DefaultMetric; sec/op
	// where a file lacks it). The other units are evidence.
	Metric string
	// Filter keeps the results a benchstat filter matches, such as
	// "/plugin:fusedstore -/timing:per-launch"; empty keeps all.
	Filter string
	// Apart also requires the two medians' confidence intervals to be
	// disjoint: with few runs a side (eight or fewer at 95%) the intervals
	// are the runs' ranges, so this asks for every run of one night to be
	// slower than every run of the other.
	Apart bool
	// AllowConfigDiff compares files from different devices or
	// configurations (gpu, cpu, clocks, goos, goarch) instead of refusing.
	AllowConfigDiff bool
}

func (o Options) withDefaults() Options {
	o.Alpha = cmp.Or(o.Alpha, DefaultAlpha)
	o.Threshold = cmp.Or(o.Threshold, DefaultThreshold)
	o.LatencyThreshold = cmp.Or(o.LatencyThreshold, DefaultLatencyThreshold)
	o.Confidence = cmp.Or(o.Confidence, DefaultConfidence)
	o.Metric = cmp.Or(o.Metric, DefaultMetric)
	return o
}
