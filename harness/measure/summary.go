package measure

import (
	"math"

	"github.com/montanaflynn/stats"
)

// A Summary describes a set of per-launch times in nanoseconds.
//
// Stddev is the sample standard deviation (n-1 divisor); with one sample
// it is 0, as is Noise. Noise is Stddev/Mean as a fraction.
type Summary struct {
	N      int     `json:"n"`
	Min    float64 `json:"min_ns"`
	Max    float64 `json:"max_ns"`
	Mean   float64 `json:"mean_ns"`
	Stddev float64 `json:"stddev_ns"`
	P50    float64 `json:"p50_ns"`
	P90    float64 `json:"p90_ns"`
	P99    float64 `json:"p99_ns"`
	P999   float64 `json:"p999_ns"`
	Noise  float64 `json:"noise"`
}

// Summarize computes a Summary of samples. It returns ErrNoSamples for an
// empty slice and a *SampleError for a NaN, infinite or negative sample.
// samples is not modified.
func Summarize(samples []float64) (Summary, error) {
	if err := validate(samples); err != nil {
		return Summary{}, err
	}
	data := stats.Float64Data(samples)
	s := Summary{N: len(samples)}
	s.Min, _ = stats.Min(data)
	s.Max, _ = stats.Max(data)
	s.Mean, _ = stats.Mean(data)
	if s.N > 1 {
		s.Stddev, _ = stats.StandardDeviationSample(data)
	}
	s.Noise = relative(s.Stddev, s.Mean)
	s.P50, s.P90, s.P99, s.P999 = percentiles(data)
	return s, nil
}

func percentiles(data stats.Float64Data) (p50, p90, p99, p999 float64) {
	// The percents are valid and data is non-empty and NaN-free, so
	// Percentile cannot fail here.
	p50, _ = stats.Percentile(data, 50)
	p90, _ = stats.Percentile(data, 90)
	p99, _ = stats.Percentile(data, 99)
	p999, _ = stats.Percentile(data, 99.9)
	return p50, p90, p99, p999
}

func validate(samples []float64) error {
	if len(samples) == 0 {
		return ErrNoSamples
	}
	for i, v := range samples {
		if math.IsNaN(v) || math.IsInf(v, 0) || v < 0 {
			return &SampleError{Index: i, Value: v}
		}
	}
	return nil
}

// relative returns stddev/mean, or 0 when both are 0 (all samples equal
// to zero).
func relative(stddev, mean float64) float64 {
	if stddev == 0 {
		return 0
	}
	return stddev / mean
}
