package benchrun

import (
	"context"
	"math"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/kvharness/kvharness/harness/measure"
	"github.com/kvharness/kvharness/harness/plugin"
	"github.com/kvharness/kvharness/harness/protocol/kvpb"
	"github.com/kvharness/kvharness/harness/results"
)

// chunkTime is the wall time one Bench call aims for: long enough to
// amortise the round trip, short enough to stay far inside the per-call
// deadline and to let the stopping rule look often.
const chunkTime = 200 * time.Millisecond

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

// sample runs req until the criterion stops it. A probe of a few launches
// sizes the batch (batched timing; batch, when not 0, is the size an
// earlier run of the cell chose, kept so that every run times the same
// batch) and the chunks: a chunk is sized by the wall time a measurement
// took in the probe, flush and round trip included, so that a cold cell
// whose flush costs milliseconds does not ask for a chunk of minutes.
func sample(ctx context.Context, p *plugin.Plugin, req *kvpb.BenchRequest, timing results.Timing, crit measure.Criterion, batch int) (sampled, error) {
	probe := cloneReq(req)
	probe.Warmup, probe.Iterations, probe.Mode, probe.Batch = 2, probeIterations, kvpb.BenchMode_BENCH_PER_LAUNCH, 1
	t0 := time.Now()
	resp, err := p.Bench(ctx, probe)
	if err != nil {
		return sampled{}, err
	}
	wall := float64(time.Since(t0)) / probeIterations
	launch := max(median3(resp.Ns), 1)
	out := sampled{batch: 1, dev: resp.Device}
	req.Mode = kvpb.BenchMode_BENCH_PER_LAUNCH
	if timing == results.Batched {
		req.Mode = kvpb.BenchMode_BENCH_BATCHED
		out.batch = batch
		if out.batch < 1 {
			out.batch = clamp(int(math.Ceil(float64(100*time.Microsecond)/launch)), 1, 1000)
		}
	}
	req.Batch = uint32(out.batch)
	perSample := max(launch*float64(out.batch), min(wall, float64(chunkTime)))
	if req.Cold {
		perSample = max(perSample, wall) // the flush is paid per sample, outside the timed region
	}
	req.Warmup = uint32(min(out.batch*3, 100))
	stop := crit.Start(nil)
	for !stop.Done() {
		left := crit.MaxSamples - len(out.ns)
		req.Iterations = uint32(clamp(int(float64(chunkTime)/perSample), 1, min(500, max(left, 1))))
		resp, err := p.Bench(ctx, req)
		if err != nil {
			return sampled{}, err
		}
		out.hostPaced += int(resp.HostPaced)
		for _, ns := range resp.Ns {
			v := ns / float64(out.batch)
			out.ns = append(out.ns, v)
			stop.Add(v)
			if stop.Done() {
				break
			}
		}
		req.Warmup = 0
	}
	out.stop = stop.Reason()
	return out, nil
}

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

func cloneReq(r *kvpb.BenchRequest) *kvpb.BenchRequest { return proto.Clone(r).(*kvpb.BenchRequest) }

func clamp(v, lo, hi int) int { return min(max(v, lo), hi) }
