package target

import (
	"context"
	"errors"
	"testing"

	"github.com/kvharness/kvharness/harness/arena"
	"github.com/kvharness/kvharness/harness/arena/shm"
	"github.com/kvharness/kvharness/harness/layout"
	"github.com/kvharness/kvharness/harness/pool"
	"github.com/kvharness/kvharness/harness/rundir"
)

// TestRequestNamesRegions: an attach of one region sends it as the arena
// alone, as older plugins expect; one of several sends every region, and
// each pool's windows name the region the pool lives in.
func TestRequestNamesRegions(t *testing.T) {
	l, err := layout.Builtin("bf16", 16, 4)
	if err != nil {
		t.Fatal(err)
	}
	g, err := pool.Plan([]pool.Spec{{Name: "device", Layout: l, Slots: 8}, {Name: "host", Layout: l, Slots: 8}}, 256)
	if err != nil {
		t.Fatal(err)
	}
	g.Regions[1].Mem = 1
	dir := &rundir.Dir{Path: t.TempDir()}
	var mems []arena.Memory
	for range 2 {
		m, err := shm.New(dir, g.Size)
		if err != nil {
			t.Fatal(err)
		}
		defer m.Close()
		mems = append(mems, m)
	}
	one := Request(arena.One(arena.HostShared, mems[0]), g, "v")
	if len(one.Regions) != 0 || one.Arena == nil || one.Variant != "v" {
		t.Errorf("one region: regions %d, arena %v", len(one.Regions), one.Arena)
	}
	two := Request(&arena.Arena{Regions: []arena.Region{{Space: arena.HostShared, Mem: mems[0]}, {Space: arena.PinnedHost, Mem: mems[1]}}}, g, "")
	switch {
	case len(two.Regions) != 2 || two.Regions[0].Path != two.Arena.Path:
		t.Errorf("two regions: %v, arena %v", two.Regions, two.Arena)
	case two.Regions[0].Pinned || !two.Regions[1].Pinned:
		t.Errorf("pinned flags %v %v, want false true", two.Regions[0].Pinned, two.Regions[1].Pinned)
	case two.Pools[0].Pool.Region != 0 || two.Pools[1].Pool.Region != 1 || two.Pools[1].GuardBefore.Region != 1 || two.Staging.Region != 0:
		t.Errorf("windows name regions %d %d %d, staging %d", two.Pools[0].Pool.Region, two.Pools[1].Pool.Region,
			two.Pools[1].GuardBefore.Region, two.Staging.Region)
	}
}

// TestPlanAndAttachStopsAtThePlan: a plan that fails is the error, and no
// attach is tried (this Base has no plugin to attach).
func TestPlanAndAttachStopsAtThePlan(t *testing.T) {
	errPlan := errors.New("no room for the arena")
	var b Base
	if err := b.PlanAndAttach(context.Background(), func() error { return errPlan }); !errors.Is(err, errPlan) {
		t.Fatalf("PlanAndAttach = %v, want the plan's error", err)
	}
}

// TestTwice: both runs' results come back in order, and a failing first
// run is not repeated.
func TestTwice(t *testing.T) {
	runs := 0
	run := func(_ context.Context, x int) (int, error) {
		runs++
		if x < 0 {
			return 0, errors.New("no such case")
		}
		return x * runs, nil
	}
	first, again, err := Twice(context.Background(), run, 3)
	if err != nil || first != 3 || again != 6 {
		t.Fatalf("Twice = %d, %d, %v; want 3, 6", first, again, err)
	}
	runs = 0
	if _, _, err := Twice(context.Background(), run, -1); err == nil || runs != 1 {
		t.Fatalf("a failing run: %v after %d runs; want its error after one", err, runs)
	}
}
