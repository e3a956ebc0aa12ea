package python

import (
	"context"
	"os"
	"os/exec"
	"testing"
	"time"

	"github.com/kvharness/kvharness/harness/arena"
	"github.com/kvharness/kvharness/harness/cuda/cudatest"
	"github.com/kvharness/kvharness/harness/kernels/load"
	"github.com/kvharness/kvharness/harness/kind"
	"github.com/kvharness/kvharness/harness/plugin"
	"github.com/kvharness/kvharness/harness/property"
)

// torchload's manifest: the Python load plugin (plugins/python/torchload).
const torchload = "torchload/kvharness-plugin.json"

// loadRun runs the load properties against the Python plugin: cases per
// row, stopping at the first failing row when stop is set.
func loadRun(t *testing.T, p *plugin.Plugin, variant string, backend arena.Backend, cases int, stop bool) []property.Verdict[*load.Case, *load.Result] {
	t.Helper()
	s := &kind.Session{Plugin: p, Dir: runDir(t)}
	suite, err := load.Suite(s, kind.Params{Variant: variant, Cases: cases, Seed: 1, Setup: kind.Setup{PageSize: 16, HeadDim: 128, Backend: backend}, StopAtFirst: stop}, load.SuiteConfig{})
	noErr(t, err)
	vs, err := suite.Run(context.Background())
	noErr(t, err)
	return vs
}

// TestPythonLoadControlAndMutants: the Python load plugin, on the SDK's
// host streams (numpy, no torch), passes every row of the load
// properties, and (in the full suite) its two mutants die where the Go
// plugin's do: the missing index-K gate in the load row, the unjoined
// store in the reuse row.
func TestPythonLoadControlAndMutants(t *testing.T) {
	slowPython(t)
	cases := rowCases(60, 20)
	switch {
	case testing.Short():
		cases = 15
	case os.Getenv("KVHARNESS_LONG") != "":
		cases = 2500 // 10,000 in all
	}
	dir := runDir(t)
	began := time.Now()
	n := 0
	for _, v := range loadRun(t, start(t, dir, abs(t, torchload), ""), "", arena.SHM{}, cases, false) {
		n += v.Outcome.Cases
		if !v.Outcome.Passed() {
			t.Errorf("torchload row %s: %+v", v.Label, v.Outcome.Failure)
		}
	}
	t.Logf("torchload passed %d cases (%d per row) in %v", n, cases, time.Since(began).Round(time.Millisecond))
	for variant, row := range map[string]string{"indexk-gate-missing": load.ProfileLoad, "store-no-join": load.ProfileReuse} {
		t.Run(variant, func(t *testing.T) {
			pythonMutant(t, "harness/kernels/load's TestMutantsKilledEverySeed (layerload's mutants of the same names)")
			vs := loadRun(t, start(t, dir, abs(t, torchload), variant), variant, arena.SHM{}, 10, true)
			v := vs[len(vs)-1]
			if f := v.Outcome.Failure; f == nil || f.Flaky || v.Label != row {
				t.Errorf("torchload %s: row %s, failure %+v; want killed in row %s", variant, v.Label, f, row)
				return
			}
			t.Logf("torchload %s: killed in row %s at case %d by %s, shrunk to %v", variant, v.Label, v.Outcome.Cases, v.Outcome.Failure.Property, v.Outcome.Failure.Case)
		})
	}
}

// TestTorchLoadOnGPU: the same on the GPU, with torch streams and events
// and the driver's stream memory operations; it needs a GPU and torch in
// the plugin's python (./scripts/gpu-load runs it).
func TestTorchLoadOnGPU(t *testing.T) {
	t.Parallel()
	python(t)
	dev := cudatest.Device(t)
	dir := runDir(t)
	for _, v := range loadRun(t, start(t, dir, abs(t, torchload), ""), "", arena.CUDA{Dev: dev}, 250, false) {
		if !v.Outcome.Passed() {
			t.Errorf("GPU torchload row %s: %+v", v.Label, v.Outcome.Failure)
		}
	}
	vs := loadRun(t, start(t, dir, abs(t, torchload), "indexk-gate-missing"), "indexk-gate-missing", arena.CUDA{Dev: dev}, 10, true)
	if f := vs[len(vs)-1].Outcome.Failure; f == nil || f.Flaky {
		t.Errorf("GPU torchload indexk-gate-missing: %+v", f)
	}
}

// TestPythonStreamsSelftest: the Python SDK's host streams follow CUDA's
// rules (torchload/streams_selftest.py, numpy only).
func TestPythonStreamsSelftest(t *testing.T) {
	t.Parallel()
	py := python(t)
	out, err := exec.Command(py, "torchload/streams_selftest.py").CombinedOutput()
	if err != nil {
		t.Fatalf("%v:\n%s", err, out)
	}
}
