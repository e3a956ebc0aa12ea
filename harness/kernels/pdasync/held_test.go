package pdasync

import (
	"context"
	"testing"

	"github.com/kvharness/kvharness/harness/arena"
	"github.com/kvharness/kvharness/harness/internal/plugintest"
	"github.com/kvharness/kvharness/harness/pd"
	"github.com/kvharness/kvharness/internal/testtier"
)

// reverseOpened is rooms × handles handles, all posted at once and held,
// then opened one at a time from the last posted to the first, each
// awaited before the next opens: more held handles than a GPU has
// hardware queues (32), in the order that deadlocks an engine whose
// opened handle can sit in a queue behind a held one.
func reverseOpened(rooms, handles int) *Case {
	c := BenchCase(pd.DefaultGeometry(1, 2*rooms*handles), rooms, handles)
	for r := rooms - 1; r >= 0; r-- {
		for k := handles - 1; k >= 0; k-- {
			c.Steps = append(c.Steps, Release(HandleRef{Room: r, K: k}))
		}
	}
	return c
}

// checkReverseOpened runs reverseOpened(20, 4), 80 handles, on the real
// plugin and fails on any violation: the control an engine with more held
// handles than queues must pass.
func checkReverseOpened(t *testing.T, prefill, decode arena.Backend) {
	p, dir := plugintest.Start(t, "pdasync")
	sys, err := Spawned(context.Background(), p, dir, Config{Seed: 1, PrefillBackend: prefill, DecodeBackend: decode}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer sys.Close(context.Background())
	c := reverseOpened(20, 4)
	if err := c.Validate(0); err != nil {
		t.Fatalf("the case itself: %v", err)
	}
	res, err := sys.Check(context.Background(), c)
	if err != nil {
		t.Fatal(err)
	}
	if res.Failed() {
		t.Fatalf("80 handles held, opened in reverse: %v", res.Violations)
	}
	t.Logf("pdasync: %d handles held at once, opened in reverse one by one: every handle told, every room read whole; %s",
		len(c.Handles()), Where(prefill, decode))
}

// TestManyHeldHandlesOpenedInReverse: on the host backend.
func TestManyHeldHandlesOpenedInReverse(t *testing.T) {
	testtier.SkipShort(t, "80 handles held and opened one at a time")
	checkReverseOpened(t, arena.SHM{}, nil)
}

// TestGPUManyHeldHandlesOpenedInReverse: on CUDA arenas, where each held
// handle would hold a hardware queue.
func TestGPUManyHeldHandlesOpenedInReverse(t *testing.T) {
	prefill, decode := gpuBackends(t)
	checkReverseOpened(t, prefill, decode)
}
