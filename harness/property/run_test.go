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
