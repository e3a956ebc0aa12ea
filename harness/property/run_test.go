package property

import (
	"context"
	"errors"
	"math/rand"
	"testing"

	"github.com/kvharness/kvharness/harness/check"
	"github.com/kvharness/kvharness/harness/oracle"
	"github.com/kvharness/kvharness/harness/plugin"
	"github.com/kvharness/kvharness/harness/workload"
)

// fakeSystem fails or faults on chosen calls, to drive Run's edge paths
// without a plugin.
type fakeSystem struct {
	calls   int
	failAt  int // first call that finds a violation
	faultAt int // a call that faults instead of answering
	cancel  func()
	stopAt  int // call after which cancel is called
}

func (f *fakeSystem) Draw(rng *rand.Rand) workload.Case {
	return &workload.Store{Padding: workload.PadNone, Valid: 1, Loc: []int64{rng.Int63n(100)}, Rows: make([]workload.Row, 1)}
}

func (f *fakeSystem) Shrink(workload.Case) []workload.Case { return nil }

func (f *fakeSystem) Check(_ context.Context, c workload.Case) (*check.Result, error) {
	f.calls++
	if f.calls == f.stopAt {
		f.cancel()
	}
	if f.calls == f.faultAt {
		return nil, &plugin.Fault{Kind: plugin.Crash, Plugin: "fake", Call: "StoreBatch", Detail: "boom"}
	}
	r := &check.Result{Case: c}
	if f.failAt > 0 && f.calls >= f.failAt {
		r.Violations = []oracle.Violation{{Kind: oracle.Value, Row: 0}}
	}
	return r, nil
}

func (f *fakeSystem) Restart(context.Context) error { return nil }

// A run cancelled between cases must not read as a pass.
func TestCancelledRunIsNotAPass(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	sys := &fakeSystem{cancel: cancel, stopAt: 5}
	o := Run(ctx, sys, Config{Cases: 100, Seed: 1})
	if o.Passed() || !errors.Is(o.Fault, context.Canceled) || o.Cases > 5 {
		t.Errorf("cancelled after 5 cases: passed %v, fault %v, cases %d", o.Passed(), o.Fault, o.Cases)
	}
}

// A violation whose confirming re-run faults is still reported, marked
// unconfirmed, beside the fault.
func TestFaultOnRerunKeepsTheFailure(t *testing.T) {
	sys := &fakeSystem{failAt: 3, faultAt: 4}
	o := Run(context.Background(), sys, Config{Cases: 50, Seed: 1, MaxFaults: 1})
	if o.Failure == nil || !o.Failure.Flaky || o.Failure.Property != oracle.Value || o.Fault == nil {
		t.Errorf("failure %+v, fault %v: want the value failure kept (unconfirmed) and the fault reported", o.Failure, o.Fault)
	}
}
