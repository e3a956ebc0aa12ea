package sdk

import (
	"time"

	"github.com/kvharness/kvharness/harness/cuda"
)

// Hold sizing: twice the host's last seen cost per queued call, plus slack,
// never more than maxHold.
const (
	initialCallCost = 50 * time.Microsecond
	holdSlack       = 20 * time.Microsecond
	maxHold         = 200 * time.Millisecond
)

// holder holds the stream while a batched measurement is queued. Every
// driver call here crosses to the device's thread and costs the host tens
// of microseconds, more than a small kernel runs; without the hold, a batch
// of small launches would be timed at the host's pace. The hold is sized
// from the host's cost per call in the previous measurement, so it keeps
// ahead of the host as that cost changes.
type holder struct {
	f        *cuda.Function // nil: no hold
	s        *cuda.Stream
	callCost time.Duration
	queued   time.Time
}

func newHolder(f *cuda.Function, s *cuda.Stream) *holder {
	return &holder{f: f, s: s, callCost: initialCallCost}
}

// hold queues the hold kernel, sized for the given number of driver calls
// to queue behind it, and starts the host's clock on those calls.
func (h *holder) hold(calls int) error {
	h.queued = time.Now()
	if h.f == nil {
		return nil
	}
	ns := min(maxHold, 2*h.callCost*time.Duration(calls)+holdSlack)
	return h.f.Launch(h.s, cuda.Dim3{X: 1}, cuda.Dim3{X: 1}, 0, uint64(ns))
}

// queuedAll records what the calls cost the host, for the next hold.
func (h *holder) queuedAll(calls int) {
	h.callCost = time.Since(h.queued) / time.Duration(max(calls, 1))
}
