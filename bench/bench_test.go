package bench

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/kvharness/kvharness/harness/arena"
	"github.com/kvharness/kvharness/harness/benchrun"
	"github.com/kvharness/kvharness/harness/kernels/store"
	"github.com/kvharness/kvharness/harness/layout"
	"github.com/kvharness/kvharness/harness/measure"
	"github.com/kvharness/kvharness/harness/plugin"
	"github.com/kvharness/kvharness/harness/protocol"
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
// loop. Each benchmark is named as kvharness bench names the same cell
// (BenchmarkStore/plugin=fusedstore/layout=bf16/head_dim=128/...), and
// each -count is a run, as each pass is in bench.txt: kvharness compare
// compares the two, the -N GOMAXPROCS suffix dropped. ns/op is the mean
// launch, p50-ns/op the median, p99-ns/op the p99 where b.N resolves it;
// GB/s counts bytes read and written over the median. BenchmarkCopy is the
// same rows copied: the roofline.
func BenchmarkStore(b *testing.B) { benchKernel(b, string(store.Name)) }

// BenchmarkCopy times a copy of each cell's input bytes.
func BenchmarkCopy(b *testing.B) { benchKernel(b, results.KernelCopy) }

func benchKernel(b *testing.B, kernel string) {
	for _, pair := range benchPairs {
		if kernel == results.KernelCopy && pair.plugin != "fusedstore" {
			continue // one roofline per layout is enough
		}
		a, p := openBench(b, pair.plugin, pair.layout)
		for _, tokens := range benchTokens {
			id := benchIdentity(pair.plugin, kernel, pair.layout, tokens)
			b.Run(subName(id), func(b *testing.B) { timeCell(b, p, a, id) })
		}
	}
}

// benchIdentity is the cell kvharness bench measures as a hot eager
// per-launch cell of this plugin, layout and size.
func benchIdentity(plugin, kernel, layoutName string, tokens int) results.Identity {
	return results.Identity{Plugin: plugin, Kernel: kernel, Layout: layoutName, HeadDim: layout.DefaultHeadDim,
		PageSize: layout.DefaultPageSize, Tokens: tokens, Mode: results.Eager, Cache: results.Hot, Timing: results.PerLaunch, BatchSize: 1}
}

// subName is the cell's name under BenchmarkStore or BenchmarkCopy: its
// kvharness bench name without the kernel.
func subName(id results.Identity) string {
	_, rest, _ := strings.Cut(id.Name(), "/")
	return rest
}

// maxIterations is the most measurements one Bench call may ask for (the
// SDK's bound); a larger b.N takes several calls.
const maxIterations = 100_000

// timeCell reports the same numbers, under the same units, as a run's
// line of kvharness bench's bench.txt: ns/op the mean launch, p50-ns/op
// the median, p99-ns/op where the run resolves it, GB/s over the median.
func timeCell(b *testing.B, p *plugin.Plugin, a *store.Arena, id results.Identity) {
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
	b.ReportMetric(sum.Mean, results.UnitTime)
	b.ReportMetric(sum.P50, results.UnitP50)
	if measure.Resolvable(sum.N, 0.99) {
		b.ReportMetric(sum.P99, results.UnitP99)
	}
	if gbps, err := measure.GBPerSecond(store.BytesMoved(l, id), sum.P50); err == nil && gbps > 0 {
		b.ReportMetric(gbps, results.UnitGBps)
	}
	if tps, err := measure.TokensPerSecond(id.Tokens, sum.P50); err == nil {
		b.ReportMetric(tps, results.UnitTokens)
	}
}

func openBench(b *testing.B, name, layoutName string) (*store.Arena, *plugin.Plugin) {
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
	want, err := arena.ParseWant(backendName(), 0)
	if err != nil {
		b.Fatal(err)
	}
	backend, release, err := want.Choose([]protocol.Backend{protocol.BackendSHM, protocol.BackendCUDA})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(release)
	l, err := layout.Builtin(layoutName, layout.DefaultHeadDim, layout.DefaultPageSize)
	if err != nil {
		b.Fatal(err)
	}
	mx := benchrun.Default(name)
	mx.Kernel = store.Name
	m := mx.Setup(backend)
	m.Tokens, m.Slots = benchTokens, 1<<17
	a, err := store.OpenArena(ctx, p, dir, l, m)
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

// TestGoTestNamesAreBenchNames: the name go test gives a cell is the one
// kvharness bench gives it, so that compare matches the two.
func TestGoTestNamesAreBenchNames(t *testing.T) {
	id := benchIdentity("fusedstore", string(store.Name), "bf16", 512)
	if got, want := "Store/"+subName(id), "Store/plugin=fusedstore/layout=bf16/head_dim=128/page_size=64/tokens=512/mode=eager/cache=hot/timing=per-launch"; got != want {
		t.Errorf("go test name %q, want %q", got, want)
	}
	if err := id.Validate(); err != nil {
		t.Errorf("the identity is not one kvharness bench could record: %v", err)
	}
}
