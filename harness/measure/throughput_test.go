package measure

import (
	"errors"
	"testing"
)

func TestThroughput(t *testing.T) {
	for _, tc := range []struct {
		name string
		f    func() (float64, error)
		want float64
	}{
		{"4096 tokens in 1ms", func() (float64, error) { return TokensPerSecond(4096, 1e6) }, 4.096e6},
		{"1 GiB in 1ms", func() (float64, error) { return GBPerSecond(1<<30, 1e6) }, 1073.741824},
		{"2.4 of 4.8 TB/s", func() (float64, error) { return PercentOf(2400, 4800) }, 50},
		{"1.5µs vs 1µs copy", func() (float64, error) { return CopyRatio(1500, 1000) }, 1.5},
	} {
		got, err := tc.f()
		if err != nil || !near(got, tc.want) {
			t.Errorf("%s = %v, %v; want %v", tc.name, got, err, tc.want)
		}
	}
}

func TestThroughputRejectsZero(t *testing.T) {
	for name, f := range map[string]func() (float64, error){
		"TokensPerSecond": func() (float64, error) { return TokensPerSecond(1, 0) },
		"GBPerSecond":     func() (float64, error) { return GBPerSecond(1, -1) },
		"PercentOf":       func() (float64, error) { return PercentOf(1, 0) },
		"CopyRatio":       func() (float64, error) { return CopyRatio(1, 0) },
	} {
		if _, err := f(); !errors.Is(err, ErrNonPositive) {
			t.Errorf("%s with a zero divisor: error = %v, want ErrNonPositive", name, err)
		}
	}
}
