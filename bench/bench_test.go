package bench

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/kvharness/kvharness/harness/arena"
	"github.com/kvharness/kvharness/harness/benchrun"
	"github.com/kvharness/kvharness/harness/layout"
	"github.com/kvharness/kvharness/harness/measure"
	"github.com/kvharness/kvharness/harness/plugin"
	"github.com/kvharness/kvharness/harness/protocol/kvpb"
	"github.com/kvharness/kvharness/harness/results"
	"github.com/kvharness/kvharness/harness/rundir"
)

// The cells go test -bench measures: a subset of the nightly matrix that
// runs in seconds on a CPU. KVHARNESS_BENCH_BACKEND=cuda moves it to a GPU.
var (
	benchTokens = []int{1, 512, 4096, 32768}
	benchPairs  = []struct{ plugin, layout string }{{"fusedstore", "bf16"}, {"fusedstore", "fp8-paged"}, {"bf16scatter", "bf16"}}
)

// BenchmarkStore times each kernel per launch inside its plugin (the
// monotonic clock on the CPU, CUDA events on a GPU): b.N launches in one
// Bench call (or several of at most 100,000), no RPC inside the timed
// loop. ns/op is the median launch, as in kvharness bench's bench.txt;
// p50-ns/op and p99-ns/op the percentiles; GB/s counts bytes read and
// written. BenchmarkCopy is the same rows copied: the roofline.
func BenchmarkStore(b *testing.B) { benchKernel(b, benchrun.KernelStore) }

// BenchmarkCopy times a copy of each cell's input bytes.
func BenchmarkCopy(b *testing.B) { benchKernel(b, benchrun.KernelCopy) }

func benchKernel(b *testing.B, kernel string) {
	for _, pair := range benchPairs {
		if kernel == benchrun.KernelCopy && pair.plugin != "fusedstore" {
			continue // one roofline per layout is enough
		}
		a, p := openBench(b, pair.plugin, pair.layout)
		for _, tokens := range benchTokens {
			id := results.Identity{Plugin: pair.plugin, Kernel: kernel, Layout: pair.layout, Tokens: tokens,
				Mode: results.Eager, Cache: results.Hot, Timing: results.PerLaunch}
			b.Run(fmt.Sprintf("plugin=%s/layout=%s/tokens=%d", pair.plugin, pair.layout, tokens), func(b *testing.B) {
				timeCell(b, p, a, id)
			})
		}
	}
}

// maxIterations is the most measurements one Bench call may ask for (the
// SDK's bound); a larger b.N takes several calls.
const maxIterations = 100_000

// timeCell reports the same numbers, under the same units, as kvharness
// bench: ns/op is the median launch (as bench.txt's), the percentiles
// are measure.Summarize's, and GB/s is over the median.
func timeCell(b *testing.B, p *plugin.Plugin, a *benchrun.Arena, id results.Identity) {
	req := a.Request(id)
	req.Warmup, req.Mode = 3, kvpb.BenchMode_BENCH_PER_LAUNCH
	var ns []float64
	for left := b.N; left > 0; left -= int(req.Iterations) {
		req.Iterations = uint32(min(left, maxIterations))
		resp, err := p.Bench(context.Background(), req)
		if err != nil {
			b.Fatal(err)
		}
		ns = append(ns, resp.Ns...)
		req.Warmup = 0
	}
	sum, err := measure.Summarize(ns)
	if err != nil {
		b.Fatal(err)
	}
	l, _ := layout.Builtin(id.Layout, layout.DefaultHeadDim, layout.DefaultPageSize)
	b.ReportMetric(sum.P50, "ns/op")
	b.ReportMetric(sum.P50, "p50-ns/op")
	b.ReportMetric(sum.P99, "p99-ns/op")
	if gbps, err := measure.GBPerSecond(benchrun.BytesMoved(l, id), sum.P50); err == nil && gbps > 0 {
		b.ReportMetric(gbps, "GB/s")
	}
}

func openBench(b *testing.B, name, layoutName string) (*benchrun.Arena, *plugin.Plugin) {
	b.Helper()
	ctx := context.Background()
	dir, err := rundir.Open()
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { dir.Close() })
	path, err := plugin.Resolve(name)
	if err != nil {
		b.Fatal(err)
	}
	// b.N launches run in one call: a large kernel times a large b.N can
	// take a while, and that is not a hang.
	p, err := plugin.Start(ctx, name, path, plugin.Options{Dir: dir, CallTimeout: 5 * time.Minute})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(p.Close)
	backend, release, err := arena.Choose(backendName(), 0, []kvpb.Backend{kvpb.Backend_BACKEND_SHM, kvpb.Backend_BACKEND_CUDA})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(release)
	l, err := layout.Builtin(layoutName, layout.DefaultHeadDim, layout.DefaultPageSize)
	if err != nil {
		b.Fatal(err)
	}
	m := benchrun.Default(name)
	m.Tokens, m.Slots = benchTokens, 1<<17
	a, err := benchrun.OpenArena(ctx, p, dir, backend, l, m)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { a.Close(ctx) })
	return a, p
}

func backendName() string {
	if s := os.Getenv("KVHARNESS_BENCH_BACKEND"); s != "" {
		return s
	}
	return "cpu"
}
