package property

import (
	"context"
	"errors"
	"math/rand"
	"testing"

	"github.com/kvharness/kvharness/harness/oracle"
	"github.com/kvharness/kvharness/harness/plugin"
)

// fakeResult is a case's violations, by kind.
type fakeResult struct{ kinds []oracle.Kind }

func (r fakeResult) Failed() bool { return len(r.kinds) > 0 }

func (r fakeResult) Has(k oracle.Kind) bool {
	for _, x := range r.kinds {
		if x == k {
			return true
		}
	}
	return false
}

func (r fakeResult) Primary() oracle.Kind {
	if len(r.kinds) == 0 {
		return ""
	}
	return r.kinds[0]
}

// fakeSystem fails or faults on chosen calls, to drive Run's edge paths
// without a plugin.
type fakeSystem struct {
	calls   int
	failAt  int // first call that finds a violation
	faultAt int // a call that faults instead of answering
	cancel  func()
	stopAt  int // call after which cancel is called
}

func (f *fakeSystem) Draw(rng *rand.Rand) int64 { return rng.Int63n(100) }

func (f *fakeSystem) Shrink(int64) []int64 { return nil }

func (f *fakeSystem) Check(_ context.Context, c int64) (fakeResult, error) {
	f.calls++
	if f.calls == f.stopAt {
		f.cancel()
	}
	if f.calls == f.faultAt {
		return fakeResult{}, &plugin.Fault{Kind: plugin.Crash, Plugin: "fake", Call: "StoreBatch", Detail: "boom"}
	}
	var r fakeResult
	if f.failAt > 0 && f.calls >= f.failAt {
		r.kinds = []oracle.Kind{oracle.Value}
	}
	return r, nil
}

func (f *fakeSystem) Restart(context.Context) error { return nil }

// A run cancelled between cases must not read as a pass.
func TestCancelledRunIsNotAPass(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	sys := &fakeSystem{cancel: cancel, stopAt: 5}
	o := Run[int64, fakeResult](ctx, sys, Config{Cases: 100, Seed: 1})
	if o.Passed() || !errors.Is(o.Fault, context.Canceled) || o.Cases > 5 {
		t.Errorf("cancelled after 5 cases: passed %v, fault %v, cases %d", o.Passed(), o.Fault, o.Cases)
	}
}

// A violation whose confirming re-run faults is still reported, marked
// unconfirmed, beside the fault.
func TestFaultOnRerunKeepsTheFailure(t *testing.T) {
	sys := &fakeSystem{failAt: 3, faultAt: 4}
	o := Run[int64, fakeResult](context.Background(), sys, Config{Cases: 50, Seed: 1, MaxFaults: 1})
	if o.Failure == nil || !o.Failure.Flaky || o.Failure.Property != oracle.Value || o.Fault == nil {
		t.Errorf("failure %+v, fault %v: want the value failure kept (unconfirmed) and the fault reported", o.Failure, o.Fault)
	}
}

// sometimesSystem is a kernel whose bug shows only on some runs, as a padded
// row racing a valid row for one slot does: a case of 10 or more fails on
// every third call and passes on the others.
type sometimesSystem struct{ calls, once int }

func (s *sometimesSystem) Draw(rng *rand.Rand) int64 { return 50 + rng.Int63n(50) }

func (s *sometimesSystem) Shrink(c int64) []int64 {
	if c <= 0 {
		return nil
	}
	return []int64{c / 2, c - 1}
}

func (s *sometimesSystem) Check(_ context.Context, c int64) (fakeResult, error) {
	s.calls++
	if c >= 10 && s.calls%3 == 0 && (s.once == 0 || s.calls == s.once) {
		return fakeResult{kinds: []oracle.Kind{oracle.Padding}}, nil
	}
	return fakeResult{}, nil
}

func (s *sometimesSystem) Restart(context.Context) error { return nil }

// A failure that shows on some runs only is confirmed by a later re-run
// (two passed between), not called flaky, and shrinks to the smallest
// failing case: each candidate, and the check in a fresh process, gets as
// many tries as confirming took.
func TestIntermittentFailureIsConfirmedAndShrunk(t *testing.T) {
	o := Run[int64, fakeResult](context.Background(), &sometimesSystem{}, Config{Cases: 50, Seed: 1, Fresh: true})
	f := o.Failure
	if f == nil || f.Flaky || f.Reruns != 3 || f.Property != oracle.Padding || f.Case != 10 {
		t.Fatalf("failure %+v: want padding confirmed on re-run 3 and shrunk to 10", f)
	}
	// The fresh process gets as many tries: one that passes is the race,
	// not a kernel that needs its process's history.
	if !f.Fresh || f.NeedsHistory {
		t.Errorf("fresh check %v, needs history %v; want checked fresh, not needing history", f.Fresh, f.NeedsHistory)
	}
}

// A failure that never shows again is flaky after ConfirmRuns re-runs,
// and not shrunk.
func TestFailureSeenOnceIsFlaky(t *testing.T) {
	o := Run[int64, fakeResult](context.Background(), &sometimesSystem{once: 3}, Config{Cases: 50, Seed: 1})
	f := o.Failure
	if f == nil || !f.Flaky || f.Reruns != ConfirmRuns || f.Shrinks != 0 || !f.Reran || f.Rerun.Failed() {
		t.Fatalf("failure %+v: want flaky after %d clean re-runs, unshrunk", f, ConfirmRuns)
	}
}

// downSystem fails every case above 1000 and shrinks a case by one: a
// shrink that would take thousands of steps.
type downSystem struct{ checks int }

func (s *downSystem) Draw(*rand.Rand) int64  { return 5000 }
func (s *downSystem) Shrink(c int64) []int64 { return []int64{c - 1} }
func (s *downSystem) Check(_ context.Context, c int64) (fakeResult, error) {
	s.checks++
	if c > 1000 {
		return fakeResult{kinds: []oracle.Kind{oracle.Value}}, nil
	}
	return fakeResult{}, nil
}
func (s *downSystem) Restart(context.Context) error { return nil }

// TestShrinkIsBounded: a shrink stops at MaxShrinkChecks candidates and
// says so; one that ends by itself does not.
func TestShrinkIsBounded(t *testing.T) {
	sys := &downSystem{}
	o := Run(context.Background(), sys, Config{Cases: 10, Seed: 1, MaxShrinks: 100000, MaxShrinkChecks: 300})
	f := o.Failure
	if f == nil || !f.ShrinkCut || f.Case != 5000-300 || sys.checks > 300+10 {
		t.Fatalf("bounded shrink: failure %+v after %d checks; want the case 4700, cut, about 300 checks", f, sys.checks)
	}
	sys = &downSystem{}
	o = Run(context.Background(), sys, Config{Cases: 10, Seed: 1, MaxShrinks: 100000, MaxShrinkChecks: 10000})
	if f := o.Failure; f == nil || f.ShrinkCut || f.Case != 1001 {
		t.Fatalf("unbounded shrink: failure %+v; want the case 1001, not cut", f)
	}
}
