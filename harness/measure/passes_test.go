package measure

import (
	"math"
	"strings"
	"testing"
	"time"
)

func TestPerPass(t *testing.T) {
	c := Criterion{MinSamples: 1000, MaxNoise: 0.02, MinTime: 600 * time.Millisecond, TimeLimit: 6 * time.Second, MaxSamples: 5000}
	got := c.PerPass(6)
	want := Criterion{MinSamples: 167, MaxNoise: 0.02, MinTime: 100 * time.Millisecond, TimeLimit: time.Second, MaxSamples: 834}
	if got != want {
		t.Errorf("PerPass(6) = %+v, want %+v", got, want)
	}
	if got := c.PerPass(1); got != c.WithDefaults() {
		t.Errorf("PerPass(1) = %+v, want the criterion itself", got)
	}
	if got := (Criterion{MinSamples: 3}).PerPass(8).MinSamples; got != 2 {
		t.Errorf("3 samples over 8 passes: %d per pass, want 2 (noise needs two)", got)
	}
}

// TestCombine: a cell converges when every run did; otherwise its reason
// is the first unmet rule, with the runs' counts and times summed.
func TestCombine(t *testing.T) {
	c := Criterion{MinSamples: 30, MaxNoise: 0.01, TimeLimit: time.Second}
	ok := StopReason{Kind: StopConverged, Samples: 10, Measured: time.Millisecond, Elapsed: 10 * time.Millisecond}
	late := StopReason{Kind: StopTimeLimit, Samples: 4, Measured: time.Millisecond, Elapsed: 300 * time.Millisecond}
	all := Combine([]StopReason{ok, ok, ok}, c, 0.004)
	if all.Kind != StopConverged || all.Samples != 30 || all.Runs != 3 || all.ConvergedRuns != 3 || all.Enough() != nil {
		t.Errorf("three converged runs: %+v, enough %v", all, all.Enough())
	}
	mixed := Combine([]StopReason{ok, late, ok}, c, 0.004)
	if mixed.Kind != StopTimeLimit || mixed.Samples != 24 || mixed.ConvergedRuns != 2 || mixed.Elapsed != 320*time.Millisecond {
		t.Errorf("a run out of time: %+v", mixed)
	}
	if err := mixed.Enough(); err == nil || !strings.Contains(err.Error(), "24 samples < min 30") {
		t.Errorf("24 of 30 samples: Enough() = %v", err)
	}
	if s := mixed.String(); !strings.Contains(s, "in 3 runs, 2 converged") {
		t.Errorf("String() = %q, want the runs counted", s)
	}
}

func TestQuantile(t *testing.T) {
	xs := []float64{7, 1, 10, 3, 5, 2, 9, 4, 8, 6}
	for q, want := range map[float64]float64{0.5: 5.5, 0.9: 9.1, 0.2: 2.8} {
		if got, err := Quantile(xs, q); err != nil || math.Abs(got-want) > 1e-9 {
			t.Errorf("Quantile(1..10, %v) = %v, %v; want %v", q, got, err, want)
		}
	}
	for _, q := range []float64{0, 1, -0.5, math.NaN()} {
		if _, err := Quantile(xs, q); err == nil {
			t.Errorf("Quantile(q=%v) succeeded", q)
		}
	}
	if _, err := Quantile(nil, 0.5); err == nil {
		t.Error("Quantile of no samples succeeded")
	}
}

func TestResolvable(t *testing.T) {
	for _, tc := range []struct {
		n    int
		q    float64
		want bool
	}{{100, 0.99, true}, {99, 0.99, false}, {999, 0.999, false}, {1000, 0.999, true}, {2, 0.5, true}, {1, 0.5, false}, {5, 0.2, true}, {4, 0.2, false}} {
		if got := Resolvable(tc.n, tc.q); got != tc.want {
			t.Errorf("Resolvable(%d, %v) = %v, want %v", tc.n, tc.q, got, tc.want)
		}
	}
}
