package property

import (
	"context"
	"math/rand"
	"testing"
	"time"

	"github.com/kvharness/kvharness/harness/oracle"
	"github.com/kvharness/kvharness/harness/plugin"
)

// warmSystem fails a case only once its process has checked warm cases
// since it started: a kernel's cache kept across calls.
type warmSystem struct {
	since, restarts, warm int
}

func (w *warmSystem) Draw(rng *rand.Rand) int64 { return 10 + rng.Int63n(90) }
func (w *warmSystem) Shrink(c int64) []int64 {
	if c > 1 {
		return []int64{c / 2, c - 1}
	}
	return nil
}
func (w *warmSystem) Restart(context.Context) error {
	w.since, w.restarts = 0, w.restarts+1
	return nil
}
func (w *warmSystem) Check(_ context.Context, c int64) (fakeResult, error) {
	w.since++
	if w.since > w.warm {
		return fakeResult{kinds: []oracle.Kind{oracle.Value}}, nil
	}
	return fakeResult{}, nil
}

// A failure that a fresh process does not repeat needs the plugin's
// history; one that it repeats does not.
func TestFreshConfirmation(t *testing.T) {
	for _, tc := range []struct {
		warm  int
		needs bool
	}{{0, false}, {5, true}} {
		sys := &warmSystem{warm: tc.warm}
		o := Run[int64, fakeResult](context.Background(), sys, Config{Cases: 50, Seed: 1, Fresh: true})
		f := o.Failure
		if f == nil || !f.Fresh || f.NeedsHistory != tc.needs || sys.restarts != 1 {
			t.Errorf("warm %d: failure %+v after %d restarts; want fresh-checked, needs history %v", tc.warm, f, sys.restarts, tc.needs)
		}
		if f != nil && f.Case != 1 {
			t.Errorf("warm %d: shrunk to %d, want 1", tc.warm, f.Case)
		}
	}
	sys := &warmSystem{warm: 5}
	if o := Run[int64, fakeResult](context.Background(), sys, Config{Cases: 50, Seed: 1}); o.Failure.Fresh || sys.restarts != 0 {
		t.Errorf("without Fresh: %+v after %d restarts; want no fresh check", o.Failure, sys.restarts)
	}
}

// crashSystem's plugin dies on every case of 50 or more, the way a
// kernel that indexes past its input panics.
type crashSystem struct {
	warmSystem
	dead bool
}

func (c *crashSystem) Restart(ctx context.Context) error {
	c.dead = false
	return c.warmSystem.Restart(ctx)
}
func (c *crashSystem) Check(_ context.Context, x int64) (fakeResult, error) {
	if c.dead {
		return fakeResult{}, &plugin.Fault{Kind: plugin.Crash, Call: "StoreBatch", Detail: "connection refused"}
	}
	if x >= 50 {
		c.dead = true
		return fakeResult{}, &plugin.Fault{Kind: plugin.Crash, Call: "StoreBatch", Detail: "process exited with status 2"}
	}
	return fakeResult{}, nil
}
func (c *crashSystem) Crashed(f *plugin.Fault) fakeResult {
	return fakeResult{kinds: []oracle.Kind{oracle.Crash}}
}

// A crash while running a case is a failure: confirmed, shrunk (a restart
// after each crash) and never a fault.
func TestCrashIsShrunkLikeAViolation(t *testing.T) {
	sys := &crashSystem{}
	o := Run[int64, fakeResult](context.Background(), sys, Config{Cases: 500, Seed: 1, Fresh: true})
	f := o.Failure
	if f == nil || f.Property != oracle.Crash || f.Flaky || f.Case != 50 || f.NeedsHistory || len(o.Faults) != 0 || o.Fault != nil {
		t.Fatalf("failure %+v, faults %v, fault %v: want a confirmed crash shrunk to 50", f, o.Faults, o.Fault)
	}
	if sys.restarts < f.Shrinks+2 {
		t.Errorf("%d restarts for %d shrinks: every crash must restart the plugin", sys.restarts, f.Shrinks)
	}
	// Without Crashed, a crash stays a plugin fault.
	plain := &crashFault{crashSystem{}}
	if o := Run[int64, fakeResult](context.Background(), plain, Config{Cases: 500, Seed: 1, MaxFaults: 2}); o.Failure != nil || o.Fault == nil {
		t.Errorf("a system that is no Crasher: failure %+v, fault %v; want the fault", o.Failure, o.Fault)
	}
}

type crashFault struct{ c crashSystem }

func (c *crashFault) Draw(rng *rand.Rand) int64         { return c.c.Draw(rng) }
func (c *crashFault) Shrink(x int64) []int64            { return c.c.Shrink(x) }
func (c *crashFault) Restart(ctx context.Context) error { return c.c.Restart(ctx) }
func (c *crashFault) Check(ctx context.Context, x int64) (fakeResult, error) {
	return c.c.Check(ctx, x)
}

// racySystem fails a case only when another check of it is in flight:
// each check waits up to wait for a partner.
type racySystem struct {
	meet chan struct{}
	wait time.Duration
}

func (r racySystem) Draw(rng *rand.Rand) int64     { return rng.Int63n(100) }
func (r racySystem) Shrink(int64) []int64          { return nil }
func (r racySystem) Restart(context.Context) error { return nil }
func (r racySystem) Check(_ context.Context, _ int64) (fakeResult, error) {
	overlap := fakeResult{kinds: []oracle.Kind{oracle.Missing}}
	for deadline := time.Now().Add(r.wait); time.Now().Before(deadline); {
		select {
		case r.meet <- struct{}{}:
			return overlap, nil
		default:
		}
		select {
		case <-r.meet:
			return overlap, nil
		case <-time.After(time.Millisecond):
		}
	}
	return fakeResult{}, nil
}

// Under stress, runs overlap and a kernel that fails only when two calls
// overlap fails every case; alone it never does.
func TestStressOverlapsRuns(t *testing.T) {
	r := racySystem{meet: make(chan struct{}), wait: 5 * time.Second}
	s := &stressed[int64, fakeResult]{systems: []System[int64, fakeResult]{r, r}, n: 4}
	for c := range int64(10) {
		if res, err := s.Check(context.Background(), c); err != nil || !res.Has(oracle.Missing) {
			t.Fatalf("case %d under stress: %v %v; want the overlap seen", c, res, err)
		}
	}
	alone := racySystem{meet: make(chan struct{}), wait: 2 * time.Millisecond}
	if o := Run[int64, fakeResult](context.Background(), alone, Config{Cases: 50, Seed: 1}); !o.Passed() {
		t.Errorf("alone: %+v; want a pass", o.Failure)
	}
}
