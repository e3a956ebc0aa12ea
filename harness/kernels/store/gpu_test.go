package store

import (
	"cmp"
	"context"
	"fmt"
	"math/rand"
	"testing"

	"github.com/kvharness/kvharness/harness/arena"
	"github.com/kvharness/kvharness/harness/cuda/cudatest"
	"github.com/kvharness/kvharness/harness/internal/kindtest"
	"github.com/kvharness/kvharness/harness/internal/plugintest"
	"github.com/kvharness/kvharness/harness/oracle"
)

// TestAheadOnCUDA: checking ahead works on device memory. On a correct
// kernel every case after the first exact ones gets its verdict from a
// window and no window is tainted; each pad-unaware mutant (one writes
// the last slot, far from every footprint, which only the window's proof
// sees) fails at the same case, with the same violations, as exact checks
// of the same draws. TestAheadMatchesExact is the same on the host.
//
// On a GPU a mutant's padded rows race for the slot they share, so two
// runs of the same case may leave another row's bytes there (and a
// determinism violation, which says so, other bytes): there the
// violations must agree in kind and place, not in which row won.
func TestAheadOnCUDA(t *testing.T) {
	aheadMatchesExact(t, arena.CUDA{Dev: cudatest.Device(t)}, AutoSets, samePlace)
}

// aheadMatchesExact checks, on backend, a correct kernel and mutants that
// fail under some paddings and pass under others (so that checking ahead
// runs for them too) twice: exactly, and ahead on sets pool sets. same
// says when two violations agree.
func aheadMatchesExact(t *testing.T, backend arena.Backend, sets int, same func(a, b oracle.Violation) bool) {
	const budget = 120
	for _, variant := range []string{"", "sink-writes", "minus1-wraps"} {
		t.Run("variant="+cmp.Or(variant, "correct"), func(t *testing.T) {
			type failure struct {
				padding Padding
				at      int
				res     *Result
			}
			run := func(sets int) ([]failure, *Target) {
				p, dir := plugintest.Start(t, "fusedstore")
				tg, err := Open(context.Background(), p, dir, Config{Variant: variant, Layout: kindtest.Layout(t, "bf16", 128, 64),
					Slots: 1 << 16, MaxCapacity: 64, Seed: 7, Backend: backend, Sets: sets})
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { tg.Close(context.Background()) })
				var out []failure
				for k, pad := range Paddings {
					sys := NewSystem(tg, pad, 64)
					sys.Budget = budget
					rng := rand.New(rand.NewSource(int64(k + 1)))
					for i := range budget {
						res, err := sys.Check(context.Background(), sys.Draw(rng))
						if err != nil {
							t.Fatalf("%s, case %d: %v", pad, i, err)
						}
						if res.Failed() {
							out = append(out, failure{pad, i, res})
							break
						}
					}
				}
				return out, tg
			}
			exact, _ := run(0)
			ahead, tg := run(sets)
			answered, tainted := tg.AheadCounts()
			t.Logf("%d sets; checking ahead answered %d cases, %d windows tainted", tg.Sets, answered, tainted)
			if tg.Sets < 2 || answered == 0 {
				t.Fatalf("checking ahead answered %d cases on %d sets: it did not run", answered, tg.Sets)
			}
			if variant == "" && (len(ahead) > 0 || tainted > 0) {
				t.Fatalf("correct kernel: %d failures checked ahead, %d windows tainted; want none", len(ahead), tainted)
			}
			if variant != "" && len(exact) == 0 {
				t.Fatalf("mutant %s passed %d cases a padding, checked exactly: the test needs it to fail", variant, budget)
			}
			if len(ahead) != len(exact) {
				t.Fatalf("%d paddings failed checked ahead, %d checked exactly", len(ahead), len(exact))
			}
			for i := range exact {
				a, e := ahead[i], exact[i]
				if a.padding != e.padding || a.at != e.at {
					t.Errorf("checked ahead: %s fails at case %d (%s); exactly: %s at case %d (%s)",
						a.padding, a.at, a.res.Primary(), e.padding, e.at, e.res.Primary())
					continue
				}
				av, ev := a.res.Violations, e.res.Violations
				for k := range max(len(av), len(ev)) {
					if k >= len(av) || k >= len(ev) || !same(av[k], ev[k]) {
						t.Errorf("%s case %d: violation %d of %d checked ahead and of %d exactly differs:\nahead:   %s\nexactly: %s",
							a.padding, a.at, k, len(av), len(ev), shownAt(av, k), shownAt(ev, k))
						break
					}
				}
			}
		})
	}
}

// shownAt is violation k of vs with its fields, or "none".
func shownAt(vs []oracle.Violation, k int) string {
	if k >= len(vs) {
		return "none"
	}
	return fmt.Sprintf("%+v", vs[k])
}

// samePlace reports whether two violations are of one kind at one place:
// the pool's bytes, field and slot they name.
func samePlace(a, b oracle.Violation) bool {
	return a.Kind == b.Kind && a.Field == b.Field && a.Slot == b.Slot && a.Off == b.Off && a.Len == b.Len
}
