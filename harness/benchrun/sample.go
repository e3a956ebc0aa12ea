package benchrun

import (
	"context"
	"fmt"
	"math"
	"time"

	"github.com/kvharness/kvharness/harness/kind"
	"github.com/kvharness/kvharness/harness/measure"
	"github.com/kvharness/kvharness/harness/results"
)

// chunkTime is the most wall time one Bench call takes: long enough to
// amortise the round trip, short enough to stay far inside the per-call
// deadline and to let the cells of a group take turns often.
const chunkTime = 50 * time.Millisecond

// minChunks is how many Bench calls a run spreads its minimum samples
// over at least, so that a run's samples come from the whole of its pass
// and not from one moment of it.
const minChunks = 3

// probeIterations are the measurements of the probe that sizes a run.
const probeIterations = 3

// sampled is one timed series, in nanoseconds per launch.
type sampled struct {
	ns        []float64
	batch     int
	stop      measure.StopReason
	dev       string
	hostPaced int // samples the plugin said may be host paced
}

// A sampler takes one run of one cell, a chunk (a timed call) at a time,
// so that the runner can interleave the chunks of a group's cells: what
// the machine does meanwhile (another tenant, a clock change) then falls
// on all of them alike, and a kernel's ratio to the floor beside it
// cancels it.
type sampler struct {
	t         kind.BenchTarget
	id        results.Identity
	chunk     kind.Chunk
	crit      measure.Criterion
	stop      measure.Stopper
	perSample float64 // wall ns one sample costs, flush and round trip included
	warmup    int
	own       time.Duration // wall time of this run's own chunks: its stopping rule's clock
	out       sampled
}

// newSampler probes cell id: a few launches size the batch (batched timing;
// batch, when not 0, is the size an earlier run of the cell chose, kept so
// that every run times the same batch) and the chunks, by the wall time a
// measurement took, flush and round trip included, so that a cold cell
// whose flush costs milliseconds does not ask for a chunk of seconds.
func newSampler(ctx context.Context, t kind.BenchTarget, id results.Identity, crit measure.Criterion, batch int) (*sampler, error) {
	t0 := time.Now()
	resp, err := t.Time(ctx, id, kind.Chunk{Warmup: 2, Iterations: probeIterations, Batch: 1})
	if err != nil {
		return nil, err
	}
	if len(resp.Ns) == 0 {
		return nil, fmt.Errorf("the plugin timed no launch of %d asked", probeIterations)
	}
	wall := float64(time.Since(t0)) / probeIterations
	launch := max(median3(resp.Ns), 1)
	s := &sampler{t: t, id: id, crit: crit, out: sampled{batch: 1, dev: resp.Device}}
	if id.Timing == results.Batched {
		s.chunk.Batched = true
		s.out.batch = batch
		if s.out.batch < 1 {
			s.out.batch = clamp(int(math.Ceil(float64(100*time.Microsecond)/launch)), 1, 1000)
		}
	}
	s.chunk.Batch = s.out.batch
	s.perSample = max(launch*float64(s.out.batch), min(wall, float64(chunkTime)))
	if id.Cache == results.Cold {
		s.perSample = max(s.perSample, wall) // the flush is paid per sample, outside the timed region
	}
	// Each chunk follows other cells' chunks: a few launches, at most a
	// tenth of its time, bring this cell's data back into the caches.
	s.warmup = clamp(int(float64(chunkTime)/10/launch), 1, min(s.out.batch*3, 100))
	// The run's clock counts its own chunks only: while the other cells
	// of the group take their turns, its time limit does not run.
	var epoch time.Time
	s.stop = crit.Start(func() time.Time { return epoch.Add(s.own) })
	return s, nil
}

// step takes one chunk; it reports whether the run is done.
func (s *sampler) step(ctx context.Context) (bool, error) {
	if s.stop.Done() {
		return true, nil
	}
	left := s.crit.MaxSamples - len(s.out.ns)
	spread := max(ceilDiv(s.crit.MinSamples, minChunks), 1)
	s.chunk.Iterations = clamp(int(float64(chunkTime)/s.perSample), 1, min(500, max(left, 1), spread))
	s.chunk.Warmup = s.warmup
	t0 := time.Now()
	resp, err := s.t.Time(ctx, s.id, s.chunk)
	s.own += time.Since(t0)
	if err != nil {
		return false, err
	}
	if len(resp.Ns) == 0 {
		return false, fmt.Errorf("the plugin timed no launch of %d asked", s.chunk.Iterations)
	}
	s.out.hostPaced += resp.HostPaced
	for _, ns := range resp.Ns {
		v := ns / float64(s.out.batch)
		s.out.ns = append(s.out.ns, v)
		s.stop.Add(v)
		if s.stop.Done() {
			break
		}
	}
	return s.stop.Done(), nil
}

func (s *sampler) result() sampled {
	s.out.stop = s.stop.Reason()
	return s.out
}

func ceilDiv(a, b int) int { return (a + b - 1) / b }

// median3 is the middle of up to three probe samples: one slow first
// launch must not size the chunks.
func median3(ns []float64) float64 {
	switch len(ns) {
	case 0:
		return 0
	case 1, 2:
		return ns[len(ns)-1]
	}
	a, b, c := ns[0], ns[1], ns[2]
	return max(min(a, b), min(max(a, b), c))
}

func clamp(v, lo, hi int) int { return min(max(v, lo), hi) }
