package read

import (
	"context"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/kvharness/kvharness/harness/arena"
	"github.com/kvharness/kvharness/harness/cuda"
)

// TestReadSuiteOnGPU runs the read properties with the arena in GPU memory
// and the plugins' CUDA read kernels: the correct ones pass, every read
// mutant is killed. It needs a GPU (./scripts/gpu-test); KVHARNESS_READ_CASES
// sets the cases per layout of the correct plugins (default 300).
func TestReadSuiteOnGPU(t *testing.T) {
	if err := cuda.Available(); err != nil {
		t.Skipf("no CUDA driver (%v): run ./scripts/gpu-test on a GPU machine", err)
	}
	dev, err := cuda.Open(0)
	if err != nil {
		t.Fatal(err)
	}
	defer dev.Close()
	cases := 300
	if n, err := strconv.Atoi(os.Getenv("KVHARNESS_READ_CASES")); err == nil && n > 0 {
		cases = n
	}
	for _, tc := range readPlugins {
		s := readSuite(t, tc.plugin, "", cases, tc.layouts...)
		s.Backend = arena.CUDA{Dev: dev}
		vs, err := s.Run(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		for _, v := range vs {
			if !v.Outcome.Passed() {
				t.Errorf("GPU %s %s: %d cases, failure %+v", tc.plugin, v.Layout.Name, v.Outcome.Cases, failureOf(v.Outcome))
			}
			t.Logf("GPU %s %s: %d cases passed in %v", tc.plugin, v.Layout.Name, v.Outcome.Cases, v.Outcome.Elapsed)
		}
	}
	for _, m := range readMutants {
		s := readSuite(t, m.plugin, m.variant, 300, m.layouts...)
		s.Backend = arena.CUDA{Dev: dev}
		vs, err := s.Run(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		for _, v := range vs {
			f := v.Outcome.Failure
			if f == nil || !kindIn(f.Property, m.kills) {
				t.Errorf("GPU %s %s: not killed by %v (%+v)", m.variant, v.Layout.Name, m.kills, f)
				continue
			}
			t.Logf("GPU %s %s: %s at case %d after %v, shrunk to %v", m.variant, v.Layout.Name, f.Property, v.Outcome.Cases, v.Outcome.ToFailure.Round(time.Millisecond), f.Case)
		}
	}
}
