package load

import (
	"context"
	"os"
	"strconv"
	"testing"

	"github.com/kvharness/kvharness/harness/arena"
	"github.com/kvharness/kvharness/harness/cuda/cudatest"
	"github.com/kvharness/kvharness/harness/internal/plugintest"
	"github.com/kvharness/kvharness/harness/plugin"
	"github.com/kvharness/kvharness/harness/sdk"
	layerload "github.com/kvharness/kvharness/plugins/layerload/kernel"
)

// The GPU half of the load kind's tests, on the layerload binary with the
// device pools in GPU memory and the host pool pinned by the plugin
// (cuMemHostRegister), real CUDA streams, events and stream memory
// operations, the latch a cuStreamWaitValue32. ./scripts/gpu-load runs
// them on the GPU machine; without a driver they skip.

// TestLoadOnGPU: the controls pass KVHARNESS_LOAD_CASES cases (default
// 10,000 each, 1,000 under -short), every mutant dies in its row within ten cases under ten
// seeds, confirmed and shrunk, and with the latch off the checker flags
// the missing index-K gate on runs where its probe saw the loaded bytes.
func TestLoadOnGPU(t *testing.T) {
	dev := cudatest.Device(t)
	backend := arena.CUDA{Dev: dev}
	total, seeds := 10000, 10
	if testing.Short() {
		// Each control's 10,000 cases take about 26 s on an H200; with
		// ten seeds the whole test took 353 s on an H100, most of it the
		// mutant table's 110 hunts (2.9–7.9 s each).
		total, seeds = 1000, 3
	}
	if n, err := strconv.Atoi(os.Getenv("KVHARNESS_LOAD_CASES")); err == nil && n > 0 {
		total = n
	}
	start := func() *plugin.Plugin {
		p, _ := plugintest.Start(t, "layerload")
		return p
	}
	passesControls(t, "GPU ", start, backend, total/len(Profiles))
	killTable(t, start, backend, seeds)
	latchOff(t, start(), backend, 200)
}

// latchOff runs the missing index-K gate's minimal case with the latch
// off, n times, on real streams: timing decides what the probe sees; the
// checker must flag every run, those where the probe saw the loaded bytes
// included.
func latchOff(t *testing.T, p *plugin.Plugin, backend arena.Backend, n int) {
	c := missingGate()
	c.NoLatch = true
	sys := NewSystem(p, plugintest.Dir(t), Config{Variant: "indexk-gate-missing", Seed: 1, Backend: backend, Geometry: c.Geometry}, nil)
	defer sys.Close(context.Background())
	lucky, flagged := 0, 0
	for range n {
		r, err := sys.Check(context.Background(), c)
		if err != nil {
			t.Fatal(err)
		}
		if r.Has(Race) {
			flagged++
			if !r.Has(ReadEarly) {
				lucky++
			}
		}
	}
	t.Logf("latch off, %d runs of %v: the checker flagged %d; in %d of them the probe saw the loaded bytes", n, c, flagged, lucky)
	if flagged != n {
		t.Errorf("the checker missed %d of %d runs", n-flagged, n)
	}
}

// TestSanitizerTarget is what compute-sanitizer wraps (racecheck,
// synccheck): the missing index-K gate, latched and not, in this one
// process, so that the sanitizer sees the plugin's streams and writes its
// summary (a plugin process is killed at the end, which loses it). It runs
// only when KVHARNESS_SANITIZER_TARGET=1.
func TestSanitizerTarget(t *testing.T) {
	if os.Getenv("KVHARNESS_SANITIZER_TARGET") != "1" {
		t.Skip("set KVHARNESS_SANITIZER_TARGET=1 and run under compute-sanitizer (./scripts/gpu-load does)")
	}
	dev := cudatest.Device(t)
	p := plugin.InProcess("layerload", sdk.Services(layerload.Plugin))
	for _, latched := range []bool{true, false} {
		c := missingGate()
		c.NoLatch = !latched
		r := checkOne(t, p, "indexk-gate-missing", arena.CUDA{Dev: dev}, c)
		t.Logf("latched %v: %d violations (stale read %v, happens-before %v)", latched, len(r.Violations), r.Has(ReadEarly), r.Has(Race))
		if !r.Has(Race) {
			t.Errorf("latched %v: the checker did not flag the missing gate", latched)
		}
	}
}
