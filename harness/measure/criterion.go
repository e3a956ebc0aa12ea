package measure

import (
	"cmp"
	"time"
)

// Defaults for a Criterion's zero fields. They follow nvbench
// (--min-samples 10, --max-noise 0.5%, --timeout 15s). Per-launch timing
// of short kernels is noisier per sample and usually wants a larger
// MinSamples, such as 200; the caller decides.
const (
	DefaultMinSamples = 10
	DefaultMaxNoise   = 0.005
	DefaultTimeLimit  = 15 * time.Second
	DefaultMaxSamples = 1_000_000
)

// A Criterion says when a cell has been sampled enough. Any zero field
// takes its default, so the zero Criterion is nvbench's policy.
//
// A run converges once it has at least MinSamples samples, their sum is
// at least MinTime, and their noise (stddev/mean) is at most MaxNoise. It
// is cut short, still unconverged, by TimeLimit of wall time since Start
// or by MaxSamples samples. To stop on samples and time alone, set
// MaxNoise to math.Inf(1).
type Criterion struct {
	MinSamples int           `json:"min_samples"` // at least 2: noise needs two samples
	MaxNoise   float64       `json:"max_noise"`   // a fraction: 0.005 is 0.5%
	MinTime    time.Duration `json:"min_time_ns"` // summed sample time; default none
	TimeLimit  time.Duration `json:"time_limit_ns"`
	MaxSamples int           `json:"max_samples"`
}

// WithDefaults returns c with every zero field set to its default and
// MinSamples raised to 2.
func (c Criterion) WithDefaults() Criterion {
	c.MinSamples = cmp.Or(c.MinSamples, DefaultMinSamples)
	c.MinSamples = max(c.MinSamples, 2)
	c.MaxNoise = cmp.Or(c.MaxNoise, DefaultMaxNoise)
	c.TimeLimit = cmp.Or(c.TimeLimit, DefaultTimeLimit)
	c.MaxSamples = cmp.Or(c.MaxSamples, DefaultMaxSamples)
	return c
}

// Start begins a run under c (with defaults applied). now is the wall
// clock the time limit is measured on; nil means time.Now. Tests pass a
// fake clock.
func (c Criterion) Start(now func() time.Time) Stopper {
	if now == nil {
		now = time.Now
	}
	return &stopper{c: c.WithDefaults(), now: now, start: now()}
}
