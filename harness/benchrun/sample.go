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

// chunkTime is the plugin time one Bench call aims for: long enough to
// amortise the round trip, short enough to stay far inside the per-call
// deadline and to let the stopping rule look often.
const chunkTime = 200 * time.Millisecond

// sampled is one timed series, in nanoseconds per launch.
type sampled struct {
	ns        []float64
	batch     int
	stop      measure.StopReason
	dev       string
	hostPaced int // samples the plugin said may be host paced
}

// sample runs req until the criterion stops it. The first call measures
// one launch to size the batch (batched timing) and the chunks.
func sample(ctx context.Context, p *plugin.Plugin, req *kvpb.BenchRequest, timing results.Timing, crit measure.Criterion) (sampled, error) {
	probe := cloneReq(req)
	probe.Warmup, probe.Iterations, probe.Mode, probe.Batch = 2, 1, kvpb.BenchMode_BENCH_PER_LAUNCH, 1
	resp, err := p.Bench(ctx, probe)
	if err != nil {
		return sampled{}, err
	}
	launch := max(resp.Ns[0], 1)
	out := sampled{batch: 1, dev: resp.Device}
	req.Mode = kvpb.BenchMode_BENCH_PER_LAUNCH
	if timing == results.Batched {
		req.Mode = kvpb.BenchMode_BENCH_BATCHED
		out.batch = clamp(int(math.Ceil(float64(100*time.Microsecond)/launch)), 1, 1000)
	}
	req.Batch = uint32(out.batch)
	req.Iterations = uint32(clamp(int(float64(chunkTime)/(launch*float64(out.batch))), 1, 500))
	req.Warmup = uint32(min(out.batch*3, 100))
	stop := crit.Start(nil)
	for !stop.Done() {
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

func cloneReq(r *kvpb.BenchRequest) *kvpb.BenchRequest { return proto.Clone(r).(*kvpb.BenchRequest) }

func clamp(v, lo, hi int) int { return min(max(v, lo), hi) }
