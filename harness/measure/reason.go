package measure

import (
	"errors"
	"fmt"
	"strings"
	"time"
)

// A StopKind names the rule that stopped a run.
type StopKind string

// The rules that stop a run. Only StopConverged means the noise target
// was met; the others are warnings to show next to the result.
const (
	StopConverged StopKind = "converged"  // min samples and min time reached, noise ≤ max
	StopTimeLimit StopKind = "time-limit" // wall time ran out first
	StopSampleCap StopKind = "sample-cap" // MaxSamples reached first
	StopBadSample StopKind = "bad-sample" // the runner passed a NaN, infinite or negative time
)

// A StopReason is a snapshot of a run: which rule stopped it (empty while
// running) and every number the rules look at, next to its threshold.
type StopReason struct {
	Kind      StopKind      `json:"kind"`
	Samples   int           `json:"samples"`
	Noise     float64       `json:"noise"`
	Measured  time.Duration `json:"measured_ns"` // sum of the samples
	Elapsed   time.Duration `json:"elapsed_ns"`  // wall time since Start
	Bad       string        `json:"bad,omitempty"`
	Criterion Criterion     `json:"criterion"`
	// Runs and ConvergedRuns count, for a cell measured in several runs
	// (Combine), its runs and those that met the criterion's share.
	Runs          int `json:"runs,omitempty"`
	ConvergedRuns int `json:"converged_runs,omitempty"`
}

// Converged reports whether the run met its noise target.
func (r StopReason) Converged() bool { return r.Kind == StopConverged }

// Warning returns nil for a converged run and otherwise an error saying
// which criterion was unmet, with both numbers. It is meant to be shown
// beside the result, not to fail the run.
func (r StopReason) Warning() error {
	if r.Kind == StopConverged {
		return nil
	}
	return errors.New(r.String())
}

// String says why the run stopped, for example
// "time-limit: noise 1.26% > 0.50% after 15s (1200 samples)".
func (r StopReason) String() string {
	switch r.Kind {
	case StopConverged:
		return fmt.Sprintf("converged: noise %s ≤ %s after %d samples (%v)%s",
			pct(r.Noise), pct(r.Criterion.MaxNoise), r.Samples, round(r.Elapsed), r.runsText())
	case StopBadSample:
		return fmt.Sprintf("bad-sample: sample %d is %s, not a duration (fix the runner's timer arithmetic)", r.Samples, r.Bad)
	case "":
		return fmt.Sprintf("running: %d samples, noise %s after %v", r.Samples, pct(r.Noise), round(r.Elapsed))
	}
	return fmt.Sprintf("%s: %s after %v (%d samples)%s", r.Kind, strings.Join(r.unmet(), ", "), round(r.Elapsed), r.Samples, r.runsText())
}

// runsText says how many of a combined reason's runs converged.
func (r StopReason) runsText() string {
	if r.Runs <= 1 {
		return ""
	}
	return fmt.Sprintf(" in %d runs, %d converged", r.Runs, r.ConvergedRuns)
}

// Enough reports whether the run (or the runs combined) took at least the
// criterion's minimum samples: what a comparison needs to judge it. Noise
// above its target is a warning, not a lack of data.
func (r StopReason) Enough() error {
	if r.Kind == StopBadSample {
		return errors.New(r.String())
	}
	if r.Samples < r.Criterion.MinSamples {
		return fmt.Errorf("%d samples < min %d (%s)", r.Samples, r.Criterion.MinSamples, r.Kind)
	}
	return nil
}

func (r StopReason) converged() bool {
	c := r.Criterion
	return r.Samples >= c.MinSamples && r.Measured >= c.MinTime && r.Noise <= c.MaxNoise
}

// unmet lists the convergence rules the run did not meet.
func (r StopReason) unmet() []string {
	c := r.Criterion
	var out []string
	if r.Samples < c.MinSamples {
		out = append(out, fmt.Sprintf("samples %d < %d", r.Samples, c.MinSamples))
	}
	if r.Measured < c.MinTime {
		out = append(out, fmt.Sprintf("measured time %v < %v", round(r.Measured), c.MinTime))
	}
	if r.Noise > c.MaxNoise {
		out = append(out, fmt.Sprintf("noise %s > %s", pct(r.Noise), pct(c.MaxNoise)))
	}
	return out
}

func pct(f float64) string { return fmt.Sprintf("%.2f%%", 100*f) }

func round(d time.Duration) time.Duration {
	if d >= time.Second {
		return d.Round(10 * time.Millisecond)
	}
	return d.Round(time.Microsecond)
}
