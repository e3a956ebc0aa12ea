package property

import (
	"context"
	"fmt"
	"math/rand"
	"time"

	"github.com/leanovate/gopter"
	"github.com/leanovate/gopter/prop"

	"github.com/kvharness/kvharness/harness/check"
	"github.com/kvharness/kvharness/harness/oracle"
	"github.com/kvharness/kvharness/harness/plugin"
	"github.com/kvharness/kvharness/harness/workload"
)

// Config shapes one property run.
type Config struct {
	Cases      int // passing cases wanted
	Seed       int64
	MaxShrinks int // shrink steps at most; 0 means 500
	MaxFaults  int // stop once the same plugin fault happened this often; 0 means 3
}

// A System is one kernel on one target, as a property run drives it: it
// draws cases, shrinks them, checks them, and restarts its plugin after a
// fault. Stores, transfers and reads each provide one.
type System interface {
	Draw(rng *rand.Rand) workload.Case
	Shrink(workload.Case) []workload.Case
	Check(context.Context, workload.Case) (*check.Result, error)
	Restart(context.Context) error
}

// Outcome is how a property run ended.
type Outcome struct {
	Cases     int      // cases checked before the run ended, the failing one included
	Failure   *Failure // the first failure, shrunk; nil if none
	Fault     error    // a plugin fault that stopped the run
	FaultCase workload.Case
	Faults    []FaultEvent  // plugin faults survived: the plugin was restarted each time
	ToFailure time.Duration // wall time until the first failure was seen
	Elapsed   time.Duration // whole run, shrinking included
}

// Passed reports a clean run: no violation, no plugin fault.
func (o *Outcome) Passed() bool { return o.Failure == nil && o.Fault == nil && len(o.Faults) == 0 }

// FaultEvent is a plugin fault and the case that triggered it.
type FaultEvent struct {
	Fault error
	Case  workload.Case
}

// Failure is a confirmed (or flaky) counterexample.
type Failure struct {
	Original *check.Result // as first found
	Minimal  *check.Result // after shrinking; Original when flaky
	Rerun    *check.Result // the confirming run (clean when Flaky)
	Property oracle.Kind   // the property shrinking preserved
	Shrinks  int
	Flaky    bool
}

// runner is the state gopter's condition closure works on.
type runner struct {
	ctx    context.Context
	sys    System
	cfg    Config
	start  time.Time
	out    *Outcome
	faults map[string]int // per fault kind and call
	streak int            // consecutive faults, for the backoff
}

// Run checks cfg.Cases generated cases against a system.
func Run(ctx context.Context, sys System, cfg Config) *Outcome {
	if cfg.MaxShrinks == 0 {
		cfg.MaxShrinks = 500
	}
	if cfg.MaxFaults == 0 {
		cfg.MaxFaults = 3
	}
	r := &runner{ctx: ctx, sys: sys, cfg: cfg, start: time.Now(), out: &Outcome{}, faults: map[string]int{}}
	params := gopter.DefaultTestParametersWithSeed(cfg.Seed)
	params.MinSuccessfulTests = cfg.Cases
	params.MaxShrinkCount = cfg.MaxShrinks
	params.Workers = 1
	prop.ForAll(r.condition, r.generator()).Check(params)
	r.out.Elapsed = time.Since(r.start)
	return r.out
}

// generator hands gopter the system's cases with the system's shrinker:
// gopter's own combinators would lose shrinking.
func (r *runner) generator() gopter.Gen {
	return func(gp *gopter.GenParameters) *gopter.GenResult {
		return gopter.NewGenResult(r.sys.Draw(gp.Rng), r.shrinker)
	}
}

func (r *runner) shrinker(v any) gopter.Shrink {
	cands := r.sys.Shrink(v.(workload.Case))
	return func() (any, bool) {
		if len(cands) == 0 {
			return nil, false
		}
		c := cands[0]
		cands = cands[1:]
		return c, true
	}
}

// condition is gopter's property: true when the case passes. After the
// first failure it becomes the shrink oracle: a candidate "fails" only if
// it still violates the same property.
func (r *runner) condition(c workload.Case) bool {
	if r.out.Fault == nil && r.ctx.Err() != nil {
		r.out.Fault, r.out.FaultCase = r.ctx.Err(), c // cancelled: the run did not pass
	}
	if r.out.Fault != nil {
		return false // stopped: fail fast so gopter ends without calling the plugin
	}
	res, err := r.sys.Check(r.ctx, c)
	if err != nil {
		return r.fault(err, c)
	}
	r.streak = 0
	f := r.out.Failure
	if f == nil {
		r.out.Cases++
		if !res.Failed() {
			return true
		}
		r.out.ToFailure = time.Since(r.start)
		return r.confirm(res)
	}
	if f.Flaky || !res.Has(f.Property) {
		return true
	}
	f.Minimal = res
	f.Shrinks++
	return false
}

// confirm re-runs a first failure before it is reported.
func (r *runner) confirm(res *check.Result) bool {
	f := &Failure{Original: res, Minimal: res, Property: res.Primary()}
	r.out.Failure = f // kept even if the re-run faults: the violation was seen
	again, err := r.sys.Check(r.ctx, res.Case)
	if err != nil {
		f.Flaky = true // not confirmed; the fault is reported beside it
		r.fault(err, res.Case)
		return false
	}
	f.Rerun = again
	f.Flaky = !again.Has(f.Property)
	return false
}

// fault handles a failed call. A plugin fault is recorded with its case,
// and the plugin restarted after a backoff, until the same fault has
// happened MaxFaults times; anything else (a harness error, a cancelled
// run, a plugin that will not restart) stops the run. The case counts as
// neither passed nor failed: gopter is told it passed so that it moves on.
func (r *runner) fault(err error, c workload.Case) bool {
	f, ok := plugin.AsFault(err)
	if !ok || r.ctx.Err() != nil {
		r.out.Fault, r.out.FaultCase = err, c
		return false
	}
	r.out.Faults = append(r.out.Faults, FaultEvent{Fault: err, Case: c})
	key := string(f.Kind) + " during " + f.Call
	if r.faults[key]++; r.faults[key] >= r.cfg.MaxFaults {
		r.out.Fault, r.out.FaultCase = fmt.Errorf("the same fault (%s) happened %d times; stopping: %w", key, r.faults[key], err), c
		return false
	}
	r.streak++
	select {
	case <-time.After(backoff(r.streak)):
	case <-r.ctx.Done():
	}
	if rerr := r.sys.Restart(r.ctx); rerr != nil {
		r.out.Fault, r.out.FaultCase = fmt.Errorf("restart after %s: %w", key, rerr), c
		return false
	}
	return true
}

// backoff doubles from 100 ms per consecutive fault, up to 2 s.
func backoff(streak int) time.Duration {
	return min(100*time.Millisecond<<min(streak-1, 5), 2*time.Second)
}
