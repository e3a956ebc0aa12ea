package measure

import (
	"math"
	"strings"
	"testing"
	"time"
)

// fakeClock advances only when told to, so time limits are exact.
type fakeClock struct{ t time.Time }

func (c *fakeClock) now() time.Time          { return c.t }
func (c *fakeClock) advance(d time.Duration) { c.t = c.t.Add(d) }

// feed adds samples from next until the stopper is done or limit samples
// were added, advancing the clock by step before each sample. It returns how many
// samples were added.
func feed(s Stopper, clk *fakeClock, step time.Duration, limit int, next func(i int) float64) int {
	for i := 0; i < limit; i++ {
		clk.advance(step) // the launch takes step of wall time
		s.Add(next(i))
		if s.Done() {
			return i + 1
		}
	}
	return limit
}

func steady(int) float64 { return 1000 }

// noisy alternates 900 and 1100 ns: a relative stddev of about 10%.
func noisy(i int) float64 { return 1000 + 100*float64(1-2*(i%2)) }

func TestDefaults(t *testing.T) {
	got := Criterion{}.WithDefaults()
	want := Criterion{MinSamples: 10, MaxNoise: 0.005, TimeLimit: 15 * time.Second, MaxSamples: 1_000_000}
	if got != want {
		t.Errorf("Criterion{}.WithDefaults() = %+v, want %+v", got, want)
	}
	if got := (Criterion{MinSamples: 1}).WithDefaults().MinSamples; got != 2 {
		t.Errorf("MinSamples 1 became %d, want 2 (noise needs two samples)", got)
	}
}

func TestSteadyStreamConvergesAtMinSamples(t *testing.T) {
	clk := &fakeClock{}
	s := Criterion{}.Start(clk.now)
	n := feed(s, clk, time.Millisecond, 1000, steady)
	r := s.Reason()
	if n != 10 || r.Kind != StopConverged || !r.Converged() || r.Warning() != nil {
		t.Fatalf("steady stream stopped after %d samples: %v; want converged after 10", n, r)
	}
	if want := "converged: noise 0.00% ≤ 0.50% after 10 samples (10ms)"; r.String() != want {
		t.Errorf("Reason().String() = %q, want %q", r.String(), want)
	}
}

func TestPerLaunchMinSamples(t *testing.T) {
	clk := &fakeClock{}
	s := Criterion{MinSamples: 200}.Start(clk.now)
	if n := feed(s, clk, time.Millisecond, 1000, steady); n != 200 {
		t.Errorf("MinSamples 200 stopped after %d samples", n)
	}
}

func TestNoisyStreamHitsTimeLimit(t *testing.T) {
	clk := &fakeClock{}
	s := Criterion{}.Start(clk.now)
	n := feed(s, clk, 100*time.Millisecond, 10_000, noisy)
	r := s.Reason()
	if n != 150 || r.Kind != StopTimeLimit || r.Converged() {
		t.Fatalf("noisy stream stopped after %d samples: %v; want time-limit after 150", n, r)
	}
	noise := 100 * math.Sqrt(150.0/149.0) / 1000 // sample stddev of ±100 around 1000
	if math.Abs(r.Noise-noise) > 1e-12 {
		t.Errorf("Noise = %v, want %v", r.Noise, noise)
	}
	want := "time-limit: noise 10.03% > 0.50% after 15s (150 samples)"
	if r.String() != want || r.Warning() == nil || r.Warning().Error() != want {
		t.Errorf("Reason = %q, Warning = %v; want %q for both", r.String(), r.Warning(), want)
	}
}

func TestSlightlyNoisyConvergesWithLooserTarget(t *testing.T) {
	clk := &fakeClock{}
	s := Criterion{MaxNoise: 0.2}.Start(clk.now)
	if n := feed(s, clk, time.Millisecond, 1000, noisy); n != 10 || !s.Reason().Converged() {
		t.Errorf("10%% noise under a 20%% target: stopped after %d: %v", n, s.Reason())
	}
}

func TestSampleCap(t *testing.T) {
	clk := &fakeClock{}
	s := Criterion{MaxSamples: 50, TimeLimit: time.Hour}.Start(clk.now)
	n := feed(s, clk, time.Millisecond, 1000, noisy)
	r := s.Reason()
	if n != 50 || r.Kind != StopSampleCap {
		t.Fatalf("stopped after %d: %v; want sample-cap after 50", n, r)
	}
	if !strings.HasPrefix(r.String(), "sample-cap: noise 10.") {
		t.Errorf("Reason = %q, want it to name the unmet noise target", r)
	}
}

func TestConvergenceBeatsCapAtSameSample(t *testing.T) {
	clk := &fakeClock{}
	s := Criterion{MaxSamples: 10}.Start(clk.now)
	feed(s, clk, time.Millisecond, 100, steady)
	if r := s.Reason(); r.Kind != StopConverged {
		t.Errorf("steady stream reaching cap and min samples together: %v, want converged", r)
	}
}

func TestMinTimeDelaysConvergence(t *testing.T) {
	clk := &fakeClock{}
	s := Criterion{MinTime: 20 * time.Microsecond}.Start(clk.now)
	if n := feed(s, clk, time.Millisecond, 1000, steady); n != 20 {
		t.Errorf("1µs samples with MinTime 20µs stopped after %d, want 20", n)
	}
}

func TestTimeLimitWithTooFewSamples(t *testing.T) {
	clk := &fakeClock{}
	s := Criterion{}.Start(clk.now)
	s.Add(1000)
	s.Add(1000)
	if s.Done() {
		t.Fatal("done after 2 of 10 samples with time left")
	}
	clk.advance(16 * time.Second) // one slow launch
	if !s.Done() {
		t.Fatal("Done() = false after the time limit passed")
	}
	want := "time-limit: samples 2 < 10 after 16s (2 samples)"
	if got := s.Reason().String(); got != want {
		t.Errorf("Reason = %q, want %q", got, want)
	}
}

func TestBadSampleStops(t *testing.T) {
	clk := &fakeClock{}
	s := Criterion{}.Start(clk.now)
	s.Add(1000)
	s.Add(math.NaN())
	r := s.Reason()
	if !s.Done() || r.Kind != StopBadSample || r.Bad != "NaN" || r.Samples != 1 {
		t.Errorf("after a NaN sample: done=%v reason=%+v", s.Done(), r)
	}
}

func TestReasonFrozenOnceDone(t *testing.T) {
	clk := &fakeClock{}
	s := Criterion{}.Start(clk.now)
	feed(s, clk, time.Millisecond, 100, steady)
	before := s.Reason()
	s.Add(1e9)
	clk.advance(time.Hour)
	if after := s.Reason(); after != before {
		t.Errorf("Reason changed after Done: %v -> %v", before, after)
	}
}

func TestReasonBeforeDoneIsProgress(t *testing.T) {
	clk := &fakeClock{}
	s := Criterion{}.Start(clk.now)
	s.Add(900)
	s.Add(1100)
	r := s.Reason()
	if r.Kind != "" || r.Samples != 2 || r.Measured != 2*time.Microsecond {
		t.Errorf("progress = %+v, want 2 samples, 2µs measured, no kind", r)
	}
}
