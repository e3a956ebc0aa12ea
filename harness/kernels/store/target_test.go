package store

import (
	"context"
	"testing"

	"github.com/kvharness/kvharness/harness/arena"
	"github.com/kvharness/kvharness/harness/internal/plugintest"
	"github.com/kvharness/kvharness/harness/layout"
	"github.com/kvharness/kvharness/harness/oracle"
	"github.com/kvharness/kvharness/harness/workload"
)

func openTarget(t testing.TB, name, layoutName, variant string) *Target {
	return openTargetSets(t, name, layoutName, variant, 4096, false)
}

// openAheadTarget is openTarget with the pool sets a suite's target keeps
// for checking ahead.
func openAheadTarget(t testing.TB, name, layoutName, variant string) *Target {
	return openTargetSets(t, name, layoutName, variant, 4096, true)
}

func openTargetSets(t testing.TB, name, layoutName, variant string, slots int, ahead bool) *Target {
	t.Helper()
	p, dir := plugintest.Start(t, name)
	l, err := layout.Builtin(layoutName, 0, 64) // 128, or the layout's fixed head dim
	if err != nil {
		t.Fatal(err)
	}
	sets := 0
	if ahead {
		sets = AutoSets
	}
	tg, err := Open(context.Background(), p, dir, Config{Backend: arena.SHM{}, Variant: variant, Layout: l, Slots: slots, MaxCapacity: 64, Seed: 7, Sets: sets})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { tg.Close(context.Background()) })
	return tg
}

func storeCase(p Padding, valid int, loc ...int64) *Case {
	c := &Case{Padding: p, Valid: valid, Loc: loc}
	for i := range loc {
		kind := workload.RowNormal
		if i >= valid {
			kind = workload.RowGarbage
		}
		c.Rows = append(c.Rows, workload.Row{Kind: kind, Seed: uint64(i + 1)})
	}
	return c
}

func TestFusedstoreStoresExactly(t *testing.T) {
	for _, l := range []string{"bf16", "fp8-paged", "fp8-rows"} {
		tg := openTarget(t, "fusedstore", l, "")
		for _, c := range []*Case{
			storeCase(PadCount, 2, 5, 63, 5, 0),
			storeCase(PadSink, 1, 64, 0, 0),
			storeCase(PadMinus1, 3, 0, 255, 128, -1),
			storeCase(PadNone, 2, 1, 2),
		} {
			res, err := tg.Check(context.Background(), c)
			if err != nil {
				t.Fatal(err)
			}
			if res.Failed() {
				t.Errorf("%s %v: %v", l, c, res.Violations)
			}
		}
	}
}

func TestBF16ScatterViolations(t *testing.T) {
	tg := openTarget(t, "bf16scatter", "bf16", "")
	for _, tc := range []struct {
		c    *Case
		kind oracle.Kind
		slot int64
	}{
		{storeCase(PadSink, 1, 3, 0), oracle.Padding, 0},
		{storeCase(PadCount, 1, 3, 9), oracle.Padding, 9},
		{storeCase(PadMinus1, 1, 3, -1), oracle.Guard, -1},
		{storeCase(PadCount, 1, 3, 3), oracle.Padding, 3}, // stale slot now owned by row 0
	} {
		res, err := tg.Check(context.Background(), tc.c)
		if err != nil {
			t.Fatal(err)
		}
		if res.Primary() != tc.kind {
			t.Errorf("%v: primary %q, want %q; %v", tc.c, res.Primary(), tc.kind, res.Violations)
			continue
		}
		for _, v := range res.Violations {
			if v.Kind == tc.kind && v.Slot != tc.slot {
				t.Errorf("%v: %s violation at slot %d, want %d", tc.c, v.Kind, v.Slot, tc.slot)
			}
		}
		if !res.Has(oracle.Differential) {
			t.Errorf("%v: padded run should differ from the unpadded one", tc.c)
		}
	}
	res, err := tg.Check(context.Background(), storeCase(PadNone, 2, 0, 255))
	if err != nil {
		t.Fatal(err)
	}
	if res.Failed() {
		t.Errorf("no padding: %v", res.Violations)
	}
}

// TestPhases: a target given Phases adds each stage's time per case, and
// the Go SDK reports its StoreBatch handler's own time in a trailer.
func TestPhases(t *testing.T) {
	tg := openTarget(t, "fusedstore", "bf16", "")
	tg.Phases = Phases{}
	if _, err := tg.Check(context.Background(), storeCase(PadCount, 2, 5, 63, 5, 0)); err != nil {
		t.Fatal(err)
	}
	for _, stage := range []string{"prepare", "stage", "store", "store-plugin", "check-staging", "capture", "classify"} {
		if tg.Phases[stage] <= 0 {
			t.Errorf("stage %s: %v; want a positive time", stage, tg.Phases[stage])
		}
	}
	if tg.Phases["store-plugin"] > tg.Phases["store"] {
		t.Errorf("the plugin's handler (%v) took longer than the call around it (%v)", tg.Phases["store-plugin"], tg.Phases["store"])
	}
}
