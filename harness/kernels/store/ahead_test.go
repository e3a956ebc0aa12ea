package store

import (
	"context"
	"errors"
	"math/rand"
	"reflect"
	"testing"

	"github.com/kvharness/kvharness/harness/arena"
	"github.com/kvharness/kvharness/harness/oracle"
	"github.com/kvharness/kvharness/internal/testtier"
)

// TestAheadSetsFillOnFirstWindow: a target fills the sets it checks ahead
// on only when its first window starts, after the first row's firstExact
// cases were checked exactly; the cases handed out are those one at a
// time would draw, in order, across that change; and every one passes.
func TestAheadSetsFillOnFirstWindow(t *testing.T) {
	tg := openAheadTarget(t, "fusedstore", "bf16", "")
	if tg.Sets < 2 || tg.fillLater == nil {
		t.Fatalf("%d sets to check ahead on, filled already %v; want at least two, not filled yet", tg.Sets, tg.fillLater == nil)
	}
	const n = 60
	sys := NewSystem(tg, PadCount, 64)
	sys.Budget = n
	rng, alone := rand.New(rand.NewSource(5)), rand.New(rand.NewSource(5))
	gen := *sys.Gen
	for i := range n {
		c := sys.Draw(rng)
		if want := gen.Draw(alone); !reflect.DeepEqual(c, want) {
			t.Fatalf("case %d differs from the one a draw at a time gives", i)
		}
		exact := sys.out == nil
		if res, err := sys.Check(context.Background(), c); err != nil || res.Failed() {
			t.Fatalf("case %d: %v %v", i, err, res)
		}
		switch filled := tg.fillLater == nil; {
		case i < firstExact && (!exact || filled):
			t.Fatalf("case %d: checked exactly %v, sets filled %v; want exact, unfilled", i, exact, filled)
		case i >= firstExact && (exact || !filled):
			t.Fatalf("case %d: checked exactly %v, sets filled %v; want checked ahead on filled sets", i, exact, filled)
		}
	}
	if answered, tainted := tg.AheadCounts(); answered != n-firstExact || tainted != 0 {
		t.Fatalf("checking ahead answered %d cases with %d windows tainted; want %d and none", answered, tainted, n-firstExact)
	}
}

// TestWriteBeforeTheFillIsReported: a write that lands in the sets to
// check ahead on before the target fills them (a stray of one of the
// exact cases) is an error when the first window starts, naming where it
// landed, not erased by the fill.
func TestWriteBeforeTheFillIsReported(t *testing.T) {
	tg := openAheadTarget(t, "fusedstore", "bf16", "")
	r := tg.Pools.Regions[tg.first+numPools] // the first set checked ahead on
	if err := tg.Mem().WriteAt([]byte{0xAB}, r.Pool.Off+100); err != nil {
		t.Fatal(err)
	}
	sys := NewSystem(tg, PadCount, 64)
	sys.Budget = 40
	rng := rand.New(rand.NewSource(5))
	var err error
	for i := 0; i < 40 && err == nil; i++ {
		_, err = sys.Check(context.Background(), sys.Draw(rng))
	}
	var uw *UnfilledWriteError
	if !errors.As(err, &uw) || uw.At.Off != r.Pool.Off+100 || uw.At.Len != 1 || uw.Region != r.Name {
		t.Fatalf("error %v; want the write at %d in %s reported before the fill", err, r.Pool.Off+100, r.Name)
	}
}

// TestDeviceBudget: a target keeps an eighth of its GPU for checking
// ahead, from 2 to 16 GiB: eight sets of 1 Mi-slot bf16 pools on an H200,
// six on an H100, and no more than a quarter of the GPU's memory for the
// four jobs check runs on a small one.
func TestDeviceBudget(t *testing.T) {
	const gib = 1 << 30
	set := numPools * (1 << 20) * 512 // three 1 Mi-slot bf16 pools of head dim 128
	for _, c := range []struct {
		total      int64
		want, sets int
	}{{141 * gib, 16 * gib, 8}, {80 * gib, 10 * gib, 6}, {24 * gib, 3 * gib, 2}, {8 * gib, 2 * gib, 0}} {
		got := deviceBudget(c.total)
		if got != c.want {
			t.Errorf("deviceBudget(%d GiB) = %d GiB; want %d GiB", c.total/gib, got/gib, c.want/gib)
		}
		if sets := min(maxSets, got/set) &^ 1; sets != c.sets && !(c.sets == 0 && sets < 2) {
			t.Errorf("%d GiB GPU: %d sets of 1 Mi-slot bf16 pools; want %d", c.total/gib, sets, c.sets)
		}
	}
}

// TestAheadMatchesExact is TestAheadOnCUDA on host shared memory: the
// correct kernel answered from windows with none tainted, and each
// mutant failing at the same case with the same violations, field for
// field (on the CPU the racing rows land in one order), as exact checks:
// 120 cases a padding in the full suite, as on the GPU, 40 outside it.
func TestAheadMatchesExact(t *testing.T) {
	budget := 40
	if testtier.Full() {
		budget = 120
	}
	aheadMatchesExact(t, arena.SHM{}, 4, budget, func(a, b []oracle.Violation) bool { return reflect.DeepEqual(a, b) })
}
