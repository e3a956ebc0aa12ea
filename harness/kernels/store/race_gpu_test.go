package store

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/kvharness/kvharness/harness/arena"
	"github.com/kvharness/kvharness/harness/cuda/cudatest"
	"github.com/kvharness/kvharness/harness/internal/kindtest"
	"github.com/kvharness/kvharness/harness/internal/plugintest"
	"github.com/kvharness/kvharness/harness/oracle"
	"github.com/kvharness/kvharness/harness/plugin"
	"github.com/kvharness/kvharness/harness/property"
)

// TestPaddingRaceOnGPU is the incident's race on a GPU: pad-unaware
// stores (bf16scatter's CUDA scatter, and torchscatter's pool[loc] = rows
// in PyTorch) given the case, C=8 n=7 with padded row 7's stale
// slot valid row 1's. Which write lands last is the GPU's to decide; the
// failure must be padding (race) naming the two rows and the slot, never
// flaky, with how many of its runs showed it, and shrunk. It skips without
// a GPU; on the GPU machine it runs from dist/gpu/tests after
// ./scripts/gpu-build (scripts/gpu-test), torchscatter with the python3
// that has torch.
func TestPaddingRaceOnGPU(t *testing.T) {
	backend := arena.CUDA{Dev: cudatest.Device(t)}
	for _, name := range []string{"bf16scatter", "torchscatter"} {
		t.Run(name, func(t *testing.T) {
			tg := raceTarget(t, name, backend)
			o := property.Run(context.Background(), fixedSystem{tg, raceCase()}, property.Config{Cases: 200, Seed: 1})
			f := o.Failure
			if f == nil {
				t.Fatalf("%d checks of the race passed: the padded write never landed last (or the kernel skips padded rows)", o.Cases)
			}
			v := f.Original.RaceViolation()
			t.Logf("found at check %d: %v\n  the padded write landed last in %d of %d runs; shrunk in %d steps to %v (race kept: %v)",
				o.Cases, v, f.RaceHits, f.RaceRuns, f.Shrinks, f.Case, !f.RaceShrunk)
			if f.Flaky || !f.Race || f.Property != oracle.Padding || v == nil || v.Race.Won != 7 || v.Race.Lost != 1 || v.Race.Slot != 40 ||
				f.RaceRuns != 2*property.RaceRuns || f.RaceHits < 1 {
				t.Fatalf("failure %+v: want padding (race) of padded row 7 over valid row 1 at slot 40, counted over %d runs", f, 2*property.RaceRuns)
			}
			if f.Case.Capacity() >= raceCase().Capacity() {
				t.Errorf("not shrunk: %v", f.Case)
			}
		})
	}
}

// raceTarget opens a bf16 target of a pad-unaware store on backend:
// bf16scatter, or torchscatter (the Python plugin, through its manifest,
// with a long call deadline: torch starts slowly).
func raceTarget(t *testing.T, name string, backend arena.Backend) *Target {
	t.Helper()
	var p *plugin.Plugin
	var dir = plugintest.Dir(t)
	switch name {
	case "torchscatter":
		manifest, _ := filepath.Abs("../../../plugins/python/torchscatter/kvharness-plugin.json")
		spec, err := plugin.ResolveSpec(manifest)
		if err != nil {
			t.Fatal(err)
		}
		if p, err = plugin.StartSpec(context.Background(), spec, plugin.Options{Dir: dir, CallTimeout: 6 * plugin.DefaultCallTimeout}); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(p.Close)
	default:
		p, dir = plugintest.Start(t, name)
	}
	tg, err := Open(context.Background(), p, dir, Config{Layout: kindtest.Layout(t, "bf16", 128, 64), Slots: 4096, MaxCapacity: 64,
		Seed: 7, Backend: backend})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { tg.Close(context.Background()) })
	return tg
}
