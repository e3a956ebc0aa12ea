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

// TestComposedOnGPU is a composed check with the pool in GPU memory:
// fusedstore's CUDA store writes, its CUDA read reads. The matching pair
// passes under every padding; the same cache read as fp8-rows (the
// token-interleaved reader of a block-planar cache) is caught on the
// value field. It needs a GPU (./scripts/gpu-test).
func TestComposedOnGPU(t *testing.T) {
	if err := cuda.Available(); err != nil {
		t.Skipf("no CUDA driver (%v): run ./scripts/gpu-test on a GPU machine", err)
	}
	dev, err := cuda.Open(0)
	if err != nil {
		t.Fatal(err)
	}
	defer dev.Close()
	b := arena.CUDA{Dev: dev}
	for _, l := range []string{"bf16", "fp8-paged", "fp8-rows"} {
		if c := composedOn(t, b, "fusedstore", "", l, "fusedstore", "", l, 128, 64, 100, 1); c.Failed() || c.Faulted() {
			t.Errorf("%s on the GPU:\n%s", l, text(c))
		}
	}
	c := composedOn(t, b, "fusedstore", "", "fp8-paged", "fusedstore", "", "fp8-rows", 128, 16, 50, 1)
	if !hasFinding(c, FindSeen, "value") || hasFinding(c, FindWritten, "") {
		t.Errorf("the planar writer and interleaved reader on the GPU:\n%s", text(c))
	}
}
