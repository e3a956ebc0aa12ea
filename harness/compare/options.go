package compare

// Defaults for zero Options fields.
const (
	DefaultAlpha      = 0.05
	DefaultThreshold  = 0.05
	DefaultConfidence = 0.95
)

// Options configures a comparison. Zero fields take the defaults.
type Options struct {
	// Alpha is the U-test significance level: a change is significant
	// when p < Alpha.
	Alpha float64
	// Threshold is the smallest relative change of the medians that
	// counts as a regression or improvement, as a fraction (0.05 = 5%).
	Threshold float64
	// Confidence is the level of the median's confidence interval.
	Confidence float64
	// Ignore lists name keys dropped before rows are matched, as
	// benchstat's -ignore does: with "variant", a run of a plugin's
	// variant compares against the baseline of the plugin itself.
	Ignore []string
}

func (o Options) withDefaults() Options {
	if o.Alpha == 0 {
		o.Alpha = DefaultAlpha
	}
	if o.Threshold == 0 {
		o.Threshold = DefaultThreshold
	}
	if o.Confidence == 0 {
		o.Confidence = DefaultConfidence
	}
	return o
}
