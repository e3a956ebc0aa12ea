package sequence

import (
	"context"
	"math/rand"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/kvharness/kvharness/harness/arena"
	"github.com/kvharness/kvharness/harness/cuda/cudatest"
	"github.com/kvharness/kvharness/harness/internal/plugintest"
	"github.com/kvharness/kvharness/harness/kind"
	"github.com/kvharness/kvharness/harness/plugin"
	"github.com/kvharness/kvharness/harness/property"
)

// The GPU half of the sequence kind's tests: the plugins' CUDA stores on
// pools in GPU memory, decode steps replayed as CUDA graphs captured once
// per capacity. ./scripts/gpu-test runs them on the GPU machine; without a
// driver they skip.

// TestSequencesOnGPU: fusedstore's CUDA store passes
// KVHARNESS_SEQUENCE_CASES sequences (default 10,000; 1,000 under
// -short) of at least 20 steps; the incident's CUDA scatter and
// fusedstore's ignore-count die under ten seeds each (graph replays on
// the device), each shrunk to at most 4 steps.
func TestSequencesOnGPU(t *testing.T) {
	dev := cudatest.Device(t)
	backend := arena.CUDA{Dev: dev}
	total := 10000
	if testing.Short() {
		total = 1000
	}
	if n, err := strconv.Atoi(os.Getenv("KVHARNESS_SEQUENCE_CASES")); err == nil && n > 0 {
		total = n
	}
	start := func(name string) *plugin.Plugin {
		p, _ := plugintest.Start(t, name)
		return p
	}
	gpuRun := func(p *plugin.Plugin, variant string, cases int, seed int64, profiles ...string) *property.Failure[*Case, *Result] {
		s := &kind.Session{Plugin: p, Dir: plugintest.Dir(t)}
		params := kind.Params{Variant: variant, Cases: cases, Seed: seed, StopAtFirst: true, Setup: kind.Setup{Backend: backend}}
		suite, err := Suite(s, params, SuiteConfig{Geometry: testGeometry, Profiles: profiles})
		if err != nil {
			t.Fatal(err)
		}
		vs, err := suite.Run(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		for _, v := range vs {
			if f := v.Outcome.Failure; f != nil {
				t.Logf("%s %q seed %d %s: %v, shrunk to %d steps (%d shrink checks): %v", p.Name, variant, seed, v.Label, f.Property, len(f.Case.Steps), f.ShrinkChecks, f.Case)
				return f
			}
		}
		return nil
	}
	t0 := time.Now()
	if f := gpuRun(start("fusedstore"), "", total/len(Profiles), 1); f != nil {
		t.Errorf("fusedstore fails on the GPU: %v", f.Minimal.Violations)
	}
	t.Logf("fusedstore: %d sequences in %s", total, time.Since(t0).Round(time.Millisecond))
	for _, m := range []struct{ plugin, variant string }{{"bf16scatter", ""}, {"fusedstore", "ignore-count"}} {
		p := start(m.plugin)
		var steps []int
		for seed := int64(1); seed <= 10; seed++ {
			f := gpuRun(p, m.variant, 200, seed, ProfileServe)
			if f == nil || f.Minimal.Primary() != Ownership {
				t.Errorf("%s %q seed %d: %v; want an ownership violation", m.plugin, m.variant, seed, f)
				continue
			}
			steps = append(steps, len(f.Case.Steps))
			if len(f.Case.Steps) > 4 {
				t.Errorf("%s %q seed %d: shrunk to %d steps; want at most 4: %v", m.plugin, m.variant, seed, len(f.Case.Steps), f.Case)
			}
		}
		t.Logf("%s %q: killed in %d of 10 seeds, minimal steps %v", m.plugin, m.variant, len(steps), steps)
	}
}

// TestStepRateOnGPU reports the step rate at 1 Mi slots a layer and the
// share of time in the ownership check, as BenchmarkSequence1Mi does on
// the CPU (fusedstore out of process, pools in GPU memory).
func TestStepRateOnGPU(t *testing.T) {
	dev := cudatest.Device(t)
	g := Geometry{HeadDims: []int{128, 64}, PageSize: 16, Pages: 1 << 16, Capacities: []int{1, 2, 4, 8, 16, 32, 64}}
	tm := &Timing{}
	p, dir := plugintest.Start(t, "fusedstore")
	sys := NewSystem(p, dir, Config{Seed: 1, Geometry: g, Timing: tm, Backend: arena.CUDA{Dev: dev}}, nil)
	defer sys.Close(context.Background())
	gen := &Gen{Geometry: g, Steps: 200, Prompt: 2048}
	rng := rand.New(rand.NewSource(1))
	if _, err := sys.Check(context.Background(), gen.Draw(rng)); err != nil { // opens the arena
		t.Fatal(err)
	}
	*tm = Timing{}
	start := time.Now()
	pages := 0
	for i := 0; i < 8; i++ {
		r, err := sys.Check(context.Background(), gen.Draw(rng))
		if err != nil || r.Failed() {
			t.Fatalf("%v %v", err, r)
		}
		pages += r.Checked
	}
	total := time.Since(start).Seconds()
	t.Logf("GPU, 1 Mi slots a layer: %.1f steps/s, %.0f%% of the time in the ownership check, %.0f live pages a step (all layers)",
		float64(tm.Steps)/total, 100*tm.Check.Seconds()/total, float64(pages)/float64(tm.Steps))
}

// TestDeviceDigestsMatchHost: digest.cu's digest of every page of a 1 Mi
// slot pool in GPU memory (two layers, after a sequence ran on it) equals
// pageDigest of the page's bytes copied to the host, and a one-byte
// change in a page changes that page's digest alone. It then reports the
// step rate with the check on the device.
func TestDeviceDigestsMatchHost(t *testing.T) {
	dev := cudatest.Device(t)
	g := Geometry{HeadDims: []int{128, 64}, PageSize: 16, Pages: 1 << 16, Capacities: []int{1, 2, 4, 8, 16, 32, 64}}
	p, dir := plugintest.Start(t, "fusedstore")
	tm := &Timing{}
	sys := NewSystem(p, dir, Config{Seed: 1, Geometry: g, Timing: tm, Backend: arena.CUDA{Dev: dev}}, nil)
	defer sys.Close(context.Background())
	gen := &Gen{Geometry: g, Steps: 200, Prompt: 2048}
	rng := rand.New(rand.NewSource(1))
	if r, err := sys.Check(context.Background(), gen.Draw(rng)); err != nil || r.Failed() {
		t.Fatalf("%v %v", err, r)
	}
	tg, err := sys.Target(context.Background(), g)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := tg.dig.(*deviceDigests); !ok {
		t.Fatalf("a CUDA arena digests with %T; want the device kernel", tg.dig)
	}
	pages := make([]int, g.Pages)
	for i := range pages {
		pages[i] = i
	}
	buf := make([]byte, 2*128*16)
	for l := range tg.layouts {
		start := time.Now()
		got, err := tg.dig.digests(tg, l, pages, buf)
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("layer %d: %d page digests on the device in %s", l, len(pages), time.Since(start).Round(time.Microsecond))
		for _, pg := range pages {
			b, err := tg.page(l, pg, buf)
			if err != nil {
				t.Fatal(err)
			}
			if want := pageDigest(b); got[pg] != want {
				t.Fatalf("layer %d page %d: device digest %#x, host %#x", l, pg, got[pg], want)
			}
		}
	}
	at := tg.pageAt(1, 777) + 5
	one := make([]byte, 1)
	if err := tg.Mem().ReadAt(one, at); err != nil {
		t.Fatal(err)
	}
	before, _ := tg.dig.digests(tg, 1, pages, buf)
	one[0] ^= 0x40
	if err := tg.Mem().WriteAt(one, at); err != nil {
		t.Fatal(err)
	}
	after, _ := tg.dig.digests(tg, 1, pages, buf)
	for pg := range pages {
		if (before[pg] != after[pg]) != (pg == 777) {
			t.Fatalf("a byte of page 777 changed: page %d's digest %#x → %#x", pg, before[pg], after[pg])
		}
	}
	*tm = Timing{}
	start := time.Now()
	for range 4 {
		if r, err := sys.Check(context.Background(), gen.Draw(rng)); err != nil || r.Failed() {
			t.Fatalf("%v %v", err, r)
		}
	}
	total := time.Since(start).Seconds()
	t.Logf("GPU, 1 Mi slots a layer, digests on the device: %.1f steps/s, %.0f%% of the time in the ownership check",
		float64(tm.Steps)/total, 100*tm.Check.Seconds()/total)
}
