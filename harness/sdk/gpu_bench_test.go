package sdk_test

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"strings"
	"testing"

	"github.com/kvharness/kvharness/harness/plugin"
	"github.com/kvharness/kvharness/harness/protocol/kvpb"
	"github.com/kvharness/kvharness/harness/sdk"
	"github.com/kvharness/kvharness/harness/sdk/store"
)

// benchRig is fusedstore attached to a bf16 and an fp8-paged pool of slots
// tokens each, with tokens gaussian rows staged for random distinct slots.
type benchRig struct {
	p     *plugin.Plugin
	pl    arenaPlan
	ga    *gpuArena
	slots int
}

func newBenchRig(t testing.TB, slots, tokens int) *benchRig {
	dev := openDevice(t)
	ctx := context.Background()
	p := startPlugin(t, "fusedstore")
	pl := newPlan([]string{"bf16", "fp8-paged"}, 128, 64, slots, tokens)
	ga := newGPUArena(t, dev, pl.size)
	t.Cleanup(ga.free)
	t.Cleanup(func() { p.Detach(ctx) }) // before the free: cleanups run last first
	_, err := p.Attach(ctx, ga, pl.attach(ga.desc(), ""))
	must(t, err)
	rng := rand.New(rand.NewPCG(5, 6))
	c := storeCase{capacity: tokens, n: tokens}
	c.rows = make([]uint16, tokens*128)
	for i := range c.rows {
		c.rows[i] = uint16(math.Float32bits(float32(rng.NormFloat64())) >> 16)
	}
	for _, s := range rng.Perm(slots)[:tokens] {
		c.loc = append(c.loc, int64(s))
	}
	img := make([]byte, pl.size)
	c.stage(img, pl)
	ga.write(t, pl.rowsOff, img[pl.rowsOff:])
	return &benchRig{p: p, pl: pl, ga: ga, slots: slots}
}

// store is the store of the first n staged rows into pool.
func (r *benchRig) store(pool, n int, graph bool) *kvpb.StoreRequest {
	return &kvpb.StoreRequest{Pool: uint32(pool), Capacity: uint32(n), Valid: uint32(n), Padding: store.PadNone,
		RowsOffset: uint64(r.pl.rowsOff), LocOffset: uint64(r.pl.locOff), Graph: graph}
}

// median benches req and returns the median sample over per launches.
func (r *benchRig) median(t testing.TB, req *kvpb.BenchRequest) float64 {
	t.Helper()
	resp, err := r.p.Bench(context.Background(), req)
	must(t, err)
	per := 1.0
	if req.Mode == kvpb.BenchMode_BENCH_BATCHED {
		per = float64(req.Batch)
	}
	return medianOf(resp.Ns) / per
}

func batched(req *kvpb.BenchRequest, batch uint32) *kvpb.BenchRequest {
	req.Mode, req.Batch = kvpb.BenchMode_BENCH_BATCHED, batch
	return req
}

func storeBench(store *kvpb.StoreRequest, iterations uint32) *kvpb.BenchRequest {
	return &kvpb.BenchRequest{Store: store, Warmup: 10, Iterations: iterations}
}

// TestBenchDevice: every bench mode answers the samples asked for on the
// GPU clock, and they are physically sane.
func TestBenchDevice(t *testing.T) {
	r := newBenchRig(t, 1<<16, 4096)
	for name, req := range benchModes(r.store(0, 4096, false), 64<<20, 0) {
		resp, err := r.p.Bench(context.Background(), req)
		if err != nil {
			t.Errorf("%s: %v", name, err)
			continue
		}
		checkSamples(t, name, req, resp, "cuda-event")
		t.Logf("%-16s median %8.2f µs on %s", name, medianOf(resp.Ns)/1e3, resp.Device)
	}
	perLaunch := r.median(t, storeBench(r.store(0, 4096, false), 50))
	inBatch := r.median(t, batched(storeBench(r.store(0, 4096, false), 50), 20))
	graph := r.median(t, batched(storeBench(r.store(1, 4096, true), 50), 20))
	empty := r.median(t, &kvpb.BenchRequest{Empty: true, Iterations: 50, Warmup: 10})
	emptyGraph := r.median(t, &kvpb.BenchRequest{Empty: true, Iterations: 50, Warmup: 10,
		Store: r.store(0, 1, true)})
	copyNs := r.median(t, &kvpb.BenchRequest{Copy: true, CopyBytes: 256 << 20, Iterations: 20, Warmup: 3})
	cold := r.median(t, &kvpb.BenchRequest{Store: r.store(0, 4096, false), Cold: true, Iterations: 20})
	tbps := 2 * float64(256<<20) / copyNs / 1e3
	t.Logf("4096 tokens: per launch %.2f µs, in a batch %.2f µs, fp8 graph %.2f µs, cold %.2f µs; empty %.2f µs (graph %.2f µs); copy 256 MiB %.1f µs = %.2f TB/s",
		perLaunch/1e3, inBatch/1e3, graph/1e3, cold/1e3, empty/1e3, emptyGraph/1e3, copyNs/1e3, tbps)
	if inBatch > 1.5*perLaunch {
		t.Errorf("a launch inside a batch (%.2f µs) is slower than a launch timed alone (%.2f µs)", inBatch/1e3, perLaunch/1e3)
	}
	if empty > 100e3 || emptyGraph > 100e3 {
		t.Errorf("an empty launch takes %.1f µs (graph %.1f µs)", empty/1e3, emptyGraph/1e3)
	}
	if tbps < 0.5 || tbps > 10 {
		t.Errorf("device copy at %.2f TB/s is not a plausible HBM bandwidth", tbps)
	}
}

// ReportEnv runs TestBenchReport: the Bench RPC's figures for fusedstore at
// the anchor sizes, for reading rather than checking.
const ReportEnv = "KVHARNESS_BENCH_REPORT"

// reportSizes are the token counts of the report: the anchor table's and two
// more small ones.
var reportSizes = []int{1, 32, 512, 4096, 32768, 262144}

// reportBatch is the launches per batched sample for n tokens: about 100 µs
// of work or more, as the harness's bench sizes it.
func reportBatch(n int) uint32 {
	if n <= 4096 {
		return 50
	}
	return 20
}

// TestBenchReport prints, for fusedstore's bf16 and fp8-paged stores at
// each report size, µs per launch through the Bench RPC: batched (eager
// and graph replays), per launch p50 (eager and graph), a device copy of
// the same n × 256 B, and an empty kernel timed the same ways.
func TestBenchReport(t *testing.T) {
	if os.Getenv(ReportEnv) == "" {
		t.Skipf("set %s=1 to print the bench report", ReportEnv)
	}
	r := newBenchRig(t, 1<<20, 262144)
	emptyReq := func(graph bool, mode kvpb.BenchMode, batch uint32) *kvpb.BenchRequest {
		return &kvpb.BenchRequest{Empty: true, Iterations: 40, Warmup: 20, Mode: mode, Batch: batch,
			Store: r.store(0, 1, graph)}
	}
	var lines []string
	add := func(format string, args ...any) { lines = append(lines, fmt.Sprintf(format, args...)) }
	add("hold kernel in batched mode: %v (%s=%q)", os.Getenv(sdk.HoldEnv) != "0", sdk.HoldEnv, os.Getenv(sdk.HoldEnv))
	add("empty kernel: per-launch p50 %.2f µs (graph %.2f µs); batched %.2f µs (graph %.2f µs)",
		r.median(t, emptyReq(false, kvpb.BenchMode_BENCH_PER_LAUNCH, 1))/1e3, r.median(t, emptyReq(true, kvpb.BenchMode_BENCH_PER_LAUNCH, 1))/1e3,
		r.median(t, emptyReq(false, kvpb.BenchMode_BENCH_BATCHED, 50))/1e3, r.median(t, emptyReq(true, kvpb.BenchMode_BENCH_BATCHED, 50))/1e3)
	add("%-9s %7s | %9s %9s | %9s %9s | %9s %8s", "layout", "tokens", "batched", "graph", "p50", "graph p50", "copy", "vs copy")
	for pool, layout := range []string{"bf16", "fp8-paged"} {
		for _, n := range reportSizes {
			b := reportBatch(n)
			store := r.median(t, batched(storeBench(r.store(pool, n, false), 15), b))
			graph := r.median(t, batched(storeBench(r.store(pool, n, true), 15), b))
			single := r.median(t, storeBench(r.store(pool, n, false), 40))
			singleGraph := r.median(t, storeBench(r.store(pool, n, true), 40))
			cp := r.median(t, batched(&kvpb.BenchRequest{Copy: true, CopyBytes: uint64(n) * 256, Warmup: 10, Iterations: 15}, b))
			add("%-9s %7d | %9.2f %9.2f | %9.2f %9.2f | %9.2f %7.3fx", layout, n, store/1e3, graph/1e3, single/1e3, singleGraph/1e3, cp/1e3, store/cp)
		}
	}
	t.Logf("fusedstore through the Bench RPC, µs per launch (batched: median sample / batch; p50: per-launch mode)\n%s", strings.Join(lines, "\n"))
}
