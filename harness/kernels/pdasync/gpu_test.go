package pdasync

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/kvharness/kvharness/harness/arena"
	"github.com/kvharness/kvharness/harness/cuda"
	"github.com/kvharness/kvharness/harness/cuda/cudatest"
	"github.com/kvharness/kvharness/harness/internal/plugintest"
	"github.com/kvharness/kvharness/harness/kind"
	"github.com/kvharness/kvharness/harness/pd"
	"github.com/kvharness/kvharness/harness/plugin"
	"github.com/kvharness/kvharness/harness/property"
	"github.com/kvharness/kvharness/plugins/pdasync/kernel"
)

// The GPU tests run the kind on CUDA arenas: the prefill arena on GPU 0,
// the decode arena on GPU 1 when there is one (every copy a peer copy over
// NVLink), else on GPU 0 too (two processes on one GPU: the same IPC
// paths). The plugin processes are the real binary (on a GPU machine,
// `kvharness serve-plugin pdasync`, as scripts/gpu-pdasync sets up); they
// skip on a machine without a GPU. See scripts/gpu-pdasync.

// gpuBackends opens the two arenas' backends, or skips.
func gpuBackends(t testing.TB) (arena.Backend, arena.Backend) {
	dev := cudatest.Device(t)
	prefill := arena.CUDA{Dev: dev}
	decode, release, err := NextGPU(prefill)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(release)
	t.Logf("pdasync on the GPU: %s", Where(prefill, decode))
	return prefill, decode
}

// gpuSuite runs the suite on CUDA arenas.
func gpuSuite(t *testing.T, p *plugin.Plugin, prefill, decode arena.Backend, variant string, cases int, seed int64, stop bool) []property.Verdict[*Case, *Result] {
	t.Helper()
	return suiteRun(t, p, kind.Params{Variant: variant, Cases: cases, Seed: seed, StopAtFirst: stop, Setup: kind.Setup{Backend: prefill}}, SuiteConfig{Decode: decode})
}

// TwoGPUSkip is the message the two-GPU test skips with where the decode
// arena cannot live on a second GPU; scripts/gpu-pdasync looks for it.
const TwoGPUSkip = "pdasync two-GPU run: skipped: %s; the other GPU tests ran with both arenas on GPU 0 (two processes, IPC). " +
	"Run ./scripts/gpu-pdasync on a machine with two GPUs (nvidia-h200-x2) for the decode arena on GPU 1 and peer copies"

// TestGPUTwoGPUs: with two GPUs, the decode arena lives on the second and
// the prefill process's copies are peer copies into it (the other GPU
// tests then run that way too); this test says so and checks that the
// peer path is what runs, on a short control and one mutant. With one GPU
// it skips, naming the machine that runs it.
func TestGPUTwoGPUs(t *testing.T) {
	prefill := arena.CUDA{Dev: cudatest.Device(t)}
	n, err := cuda.DeviceCount()
	switch {
	case err != nil:
		t.Fatalf("count the GPUs: %v", err)
	case os.Getenv(OneGPUEnv) != "":
		t.Skipf(TwoGPUSkip, OneGPUEnv+" is set")
	case n < 2:
		t.Skipf(TwoGPUSkip, fmt.Sprintf("this machine has %d GPU", n))
	}
	decode, release, err := NextGPU(prefill)
	if err != nil {
		t.Fatal(err)
	}
	defer release()
	dc, ok := decode.(arena.CUDA)
	if !ok || dc.Dev.Ordinal() == prefill.Dev.Ordinal() {
		t.Fatalf("with %d GPUs the decode arena is on %s; want another GPU than the prefill's", n, Where(prefill, decode))
	}
	can, err := prefill.Dev.CanAccessPeer(dc.Dev)
	if err != nil || !can {
		t.Fatalf("GPU %d cannot map GPU %d's memory (%v): the prefill's copies into the decode arena need peer access", prefill.Dev.Ordinal(), dc.Dev.Ordinal(), err)
	}
	p, _ := plugintest.Start(t, "pdasync")
	total := requirePassed(t, gpuSuite(t, p, prefill, decode, "", 100, 7, false), 100)
	vs := gpuSuite(t, p, prefill, decode, "abort-frees-in-flight", 200, 7, true)
	f := vs[len(vs)-1].Outcome.Failure
	if f == nil || f.Flaky {
		t.Fatalf("abort-frees-in-flight survived across two GPUs")
	}
	t.Logf("pdasync two-GPU run: %d control cases passed, abort-frees-in-flight killed by %s; %s", total, f.Property, Where(prefill, decode))
}

// TestGPUControlPasses: the correct engine passes every profile on the GPU
// (CasesEnv cases per row; scripts/gpu-pdasync asks for 2,500: 10,000 in
// all).
func TestGPUControlPasses(t *testing.T) {
	prefill, decode := gpuBackends(t)
	p, _ := plugintest.Start(t, "pdasync")
	cases := casesFromEnv(t, 100)
	total := requirePassed(t, gpuSuite(t, p, prefill, decode, "", cases, 1, false), cases)
	t.Logf("pdasync GPU control: %d cases passed over %d profiles, two processes, %s", total, len(Profiles), Where(prefill, decode))
}

// TestGPUMutantsKilledEverySeed: every mutant dies in each of ten seeds on
// the GPU, as on the CPU.
func TestGPUMutantsKilledEverySeed(t *testing.T) {
	prefill, decode := gpuBackends(t)
	p, _ := plugintest.Start(t, "pdasync")
	for _, v := range kernel.Plugin.Variants {
		var kills []string
		for seed := range int64(10) {
			vs := gpuSuite(t, p, prefill, decode, v.Name, 200, 100*seed+1, true)
			last := vs[len(vs)-1]
			if f := last.Outcome.Failure; f != nil && !f.Flaky && f.Reruns == 1 { // deterministic: the first re-run fails too
				kills = append(kills, fmt.Sprintf("%s@%d", f.Property, last.Outcome.Cases))
			}
		}
		t.Logf("pdasync GPU mutant %-22s killed %d/10: %s", v.Name, len(kills), strings.Join(kills, " "))
		if len(kills) != 10 {
			t.Errorf("%s killed in %d of 10 seeds on the GPU", v.Name, len(kills))
		}
	}
}

// gpuBenchGeometry is the GPU bench's memory: one layer of 16384 pages a
// pool (bf16 16 KiB pages, two fp8 8.25 KiB ones: 528 MiB a side), so
// that bandwidth, not the completion's round trips, dominates.
var gpuBenchGeometry = pd.DefaultGeometry(1, 16384)

// TestGPUBench logs the engine's throughput on the GPU against a
// cuMemcpyDtoDAsync of the same bytes between the two arenas (a peer copy
// on two GPUs), for a few shapes of handles.
func TestGPUBench(t *testing.T) {
	prefill, decode := gpuBackends(t)
	p, dir := plugintest.Start(t, "pdasync")
	sys, err := Spawned(context.Background(), p, dir, Config{Seed: 1, PrefillBackend: prefill, DecodeBackend: decode}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer sys.Close(context.Background())
	tg, err := sys.Target(context.Background(), gpuBenchGeometry)
	if err != nil {
		t.Fatal(err)
	}
	for _, shape := range [][2]int{{1, 1}, {16, 4}, {64, 4}} {
		c := BenchCase(gpuBenchGeometry, shape[0], shape[1])
		var best BenchResult
		for i := range 5 {
			r, err := tg.Bench(context.Background(), c, i == 0)
			if err != nil {
				t.Fatal(err)
			}
			if i == 0 || r.Engine < best.Engine {
				best.Engine, best.Bytes = r.Engine, r.Bytes
			}
			if i == 0 || r.Reference < best.Reference {
				best.Reference = r.Reference
			}
		}
		t.Logf("pdasync GPU bench: %d rooms × %d handles, %s MB: engine %.1f GB/s (%v), copy %.1f GB/s (%v); %s",
			shape[0], shape[1], strconv.FormatFloat(float64(best.Bytes)/1e6, 'f', 1, 64),
			GBps(best.Bytes, best.Engine), best.Engine, GBps(best.Bytes, best.Reference), best.Reference, Where(prefill, decode))
	}
}
