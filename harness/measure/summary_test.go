package measure

import (
	"errors"
	"math"
	"slices"
	"testing"
)

func near(a, b float64) bool { return math.Abs(a-b) <= 1e-9*math.Max(1, math.Abs(b)) }

func TestSummarizeOneToTen(t *testing.T) {
	s, err := Summarize([]float64{7, 1, 10, 3, 5, 2, 9, 4, 8, 6})
	if err != nil {
		t.Fatal(err)
	}
	sd := math.Sqrt(55.0 / 6.0) // sample variance of 1..10 is 82.5/9
	want := Summary{N: 10, Min: 1, Max: 10, Mean: 5.5, Stddev: sd,
		P50: 5.5, P90: 9.1, P99: 9.91, P999: 9.991, Noise: sd / 5.5}
	got := []float64{float64(s.N), s.Min, s.Max, s.Mean, s.Stddev, s.P50, s.P90, s.P99, s.P999, s.Noise}
	exp := []float64{float64(want.N), want.Min, want.Max, want.Mean, want.Stddev, want.P50, want.P90, want.P99, want.P999, want.Noise}
	names := []string{"N", "Min", "Max", "Mean", "Stddev", "P50", "P90", "P99", "P999", "Noise"}
	for i := range got {
		if !near(got[i], exp[i]) {
			t.Errorf("%s = %v, want %v", names[i], got[i], exp[i])
		}
	}
}

func TestSummarizeSingleSample(t *testing.T) {
	s, err := Summarize([]float64{42})
	if err != nil {
		t.Fatal(err)
	}
	if s.N != 1 || s.Stddev != 0 || s.Noise != 0 || s.P50 != 42 || s.P999 != 42 || s.Min != 42 {
		t.Errorf("Summarize([42]) = %+v, want every location 42 and zero spread", s)
	}
}

func TestSummarizeAllZero(t *testing.T) {
	s, err := Summarize([]float64{0, 0, 0})
	if err != nil {
		t.Fatal(err)
	}
	if s.Noise != 0 || s.Mean != 0 {
		t.Errorf("noise of all-zero samples = %v, want 0 (not NaN)", s.Noise)
	}
}

func TestSummarizeLeavesInputAlone(t *testing.T) {
	in := []float64{3, 1, 2}
	if _, err := Summarize(in); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(in, []float64{3, 1, 2}) {
		t.Errorf("Summarize reordered its input to %v", in)
	}
}

func TestSummarizeRejects(t *testing.T) {
	if _, err := Summarize(nil); !errors.Is(err, ErrNoSamples) {
		t.Errorf("Summarize(nil) error = %v, want ErrNoSamples", err)
	}
	for _, bad := range []float64{math.NaN(), math.Inf(1), -1} {
		_, err := Summarize([]float64{1, 2, bad, 4})
		var se *SampleError
		if !errors.As(err, &se) {
			t.Errorf("Summarize with %v: error = %v, want *SampleError", bad, err)
			continue
		}
		if se.Index != 2 {
			t.Errorf("Summarize with %v: SampleError.Index = %d, want 2", bad, se.Index)
		}
	}
}
