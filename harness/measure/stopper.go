package measure

import (
	"math"
	"strconv"
	"time"
)

// A Stopper decides when to stop sampling one cell. The runner calls Add
// after each sample and stops when Done reports true; Reason says why.
type Stopper interface {
	// Add records one per-launch time in nanoseconds. A NaN, infinite or
	// negative sample is not recorded; it stops the run with StopBadSample.
	Add(sample float64)
	// Done reports whether sampling should stop. It also checks the time
	// limit, so a runner waiting on a slow launch can poll it.
	Done() bool
	// Reason describes why the run stopped, or, before Done, the progress
	// so far (with an empty Kind).
	Reason() StopReason
}

var _ Stopper = (*stopper)(nil)

type stopper struct {
	c      Criterion
	now    func() time.Time
	start  time.Time
	acc    running
	reason StopReason // Kind is set once stopped, then frozen
}

func (s *stopper) Add(sample float64) {
	if s.reason.Kind != "" {
		return
	}
	if math.IsNaN(sample) || math.IsInf(sample, 0) || sample < 0 {
		s.reason = s.progress()
		s.reason.Kind = StopBadSample
		s.reason.Bad = strconv.FormatFloat(sample, 'g', -1, 64)
		return
	}
	s.acc.add(sample)
	s.check()
}

func (s *stopper) Done() bool {
	if s.reason.Kind == "" {
		s.check()
	}
	return s.reason.Kind != ""
}

func (s *stopper) Reason() StopReason {
	if s.reason.Kind != "" {
		return s.reason
	}
	return s.progress()
}

// check sets the stop reason if any rule is met. Convergence wins over a
// limit reached at the same sample.
func (s *stopper) check() {
	r := s.progress()
	switch {
	case r.converged():
		r.Kind = StopConverged
	case r.Samples >= s.c.MaxSamples:
		r.Kind = StopSampleCap
	case r.Elapsed >= s.c.TimeLimit:
		r.Kind = StopTimeLimit
	default:
		return
	}
	s.reason = r
}

func (s *stopper) progress() StopReason {
	return StopReason{
		Samples:   s.acc.n,
		Noise:     s.acc.noise(),
		Measured:  time.Duration(s.acc.sum),
		Elapsed:   s.now().Sub(s.start),
		Criterion: s.c,
	}
}
