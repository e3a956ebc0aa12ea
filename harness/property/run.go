package property

import (
	"context"
	"fmt"
	"math/rand"
	"time"

	"github.com/leanovate/gopter"
	"github.com/leanovate/gopter/prop"

	"github.com/kvharness/kvharness/harness/oracle"
	"github.com/kvharness/kvharness/harness/plugin"
)

// Config shapes one property run.
type Config struct {
	Cases      int // passing cases wanted
	Seed       int64
	MaxShrinks int // shrink steps at most; 0 means 500
	// MaxShrinkChecks bounds the candidates a shrink checks, the steps
	// that stuck and those that did not together; 0 means
	// DefaultShrinkChecks. A shrink that reaches it stops where it is and
	// says so (Failure.ShrinkCut): a report comes in seconds, whatever
	// the case, at the price of a case that could be smaller.
	MaxShrinkChecks int
	MaxFaults       int // stop once the same plugin fault happened this often; 0 means 3
	// Fresh confirms a shrunk failure once more in a plugin process
	// started for it (System.Restart): a case that fails only in the
	// warm process that ran the search needs the plugin's history. Off
	// for a plugin linked into this process, which cannot start afresh.
	Fresh bool
}

// Result is a checked case's verdict, as a property run reads it. Each
// kind's result type implements it over its own violations.
type Result interface {
	// Failed reports whether any invariant was violated.
	Failed() bool
	// Has reports whether a violation of kind k was found.
	Has(k oracle.Kind) bool
	// Primary is the kind a report leads with.
	Primary() oracle.Kind
}

// A System is one kernel on one target, as a property run drives it: it
// draws cases of type C, shrinks them, checks them into results of type R,
// and restarts its plugin after a fault. Each kernel kind provides one.
type System[C any, R Result] interface {
	Draw(rng *rand.Rand) C
	Shrink(C) []C
	Check(context.Context, C) (R, error)
	Restart(context.Context) error
}

// A Racer is a result that can lead with a race: two writers of one slot
// in one call, which of them lands last decided anew each run. Such a
// failure is not flaky when a re-run passes: the case's structure is the
// bug whichever write wins. It is confirmed over RaceRuns runs, each of
// its shrink candidates gets as many tries, and the report says in how
// many runs of the minimal case the wrong write landed last.
type Racer interface {
	Race() bool
	// RaceShown says in how many of the runs the check made of its case
	// (hits of runs) the race showed: the wrong write landed last.
	RaceShown() (hits, runs int)
}

// RaceRuns is how many times a race's case is checked to count how often
// the wrong write lands last, and the most tries a shrink candidate of a
// race gets before it counts as passing.
const RaceRuns = 10

// isRace reports whether res leads with a race.
func isRace[R Result](res R) bool {
	r, ok := any(res).(Racer)
	return ok && r.Race()
}

// raceShown is res's RaceShown, when it is a Racer.
func raceShown[R Result](res R) (hits, runs int) {
	if r, ok := any(res).(Racer); ok {
		return r.RaceShown()
	}
	return 0, 0
}

// A Sparer keeps a spare plugin process (plugin.Plugin.KeepSpare) for
// each of its system's processes from the first failure on: confirming,
// shrinking a crash (a restart each) and the fresh-process check then
// adopt a process started while the run went on, instead of waiting for
// one. A run that passes starts none.
type Sparer interface {
	KeepSpare(context.Context)
}

// A Crasher turns a crash of the plugin's process while it ran a case
// (a panic, a signal, a device fault) into the kind's result, so that the
// case fails the way one that wrote wrong bytes fails: confirmed, shrunk
// and saved. The plugin is restarted after each crash. A system that is
// not a Crasher reports crashes as plugin faults.
type Crasher[R Result] interface {
	Crashed(*plugin.Fault) R
}

// Outcome is how a property run ended.
type Outcome[C any, R Result] struct {
	Cases     int             // cases checked before the run ended, the failing one included
	Failure   *Failure[C, R]  // the first failure, shrunk; nil if none
	Fault     error           // a plugin fault that stopped the run
	FaultCase *C              // the case it stopped at, when there was one
	Faults    []FaultEvent[C] // plugin faults survived: the plugin was restarted each time
	ToFailure time.Duration   // wall time until the first failure was seen
	Elapsed   time.Duration   // whole run, shrinking included
	// Confirming and Fresh are the wall time of the first failure's
	// re-runs and of its check in a fresh plugin process (the restart
	// included): with ToFailure, where a failing row's time went.
	Confirming, Fresh time.Duration
}

// Passed reports a clean run: no violation, no plugin fault.
func (o *Outcome[C, R]) Passed() bool {
	return o.Failure == nil && o.Fault == nil && len(o.Faults) == 0
}

// FaultEvent is a plugin fault and the case that triggered it.
type FaultEvent[C any] struct {
	Fault error
	Case  C
}

// Failure is a confirmed (or flaky) counterexample.
type Failure[C any, R Result] struct {
	Original R           // as first found
	Minimal  R           // after shrinking; Original when flaky
	Rerun    R           // the confirming run (clean when Flaky; zero when it faulted)
	Reran    bool        // Rerun holds a result
	Case     C           // Minimal's case
	Property oracle.Kind // the property shrinking preserved
	Shrinks  int
	// ShrinkCut: the shrink stopped at Config.MaxShrinkChecks, so Case
	// may not be minimal.
	ShrinkCut bool
	// ShrinkChecks is how many candidates the shrink checked, those that
	// stuck (Shrinks) and those that did not.
	ShrinkChecks int
	Flaky        bool
	// Reruns is how many re-runs the confirmation made: 1 when the first
	// re-run failed the same way, more when earlier ones passed (a race:
	// the case fails only some runs; shrinking then gives each candidate
	// as many tries), ConfirmRuns when flaky.
	Reruns int
	// Tries is how many runs a shrink candidate (or the check in a fresh
	// process) gets to fail the same way: Reruns, or RaceRuns for a race.
	Tries int
	// Fresh says the shrunk case was checked again in a plugin process
	// started for it; NeedsHistory, that it passed there: it fails only
	// after what the plugin's process did before (a cache, a buffer kept
	// across calls).
	Fresh, NeedsHistory bool
	// Race: the case found led with a race (Racer); RaceHits of RaceRuns
	// runs (RaceRuns checks of the case, each of a kind's runs of it)
	// showed the violation, the wrong write last: runs of the minimal
	// case, or, when RaceShrunk, of the case found, which shrank to one
	// that shows the bug without a race.
	Race, RaceShrunk   bool
	RaceRuns, RaceHits int
}

// runner is the state gopter's condition closure works on.
type runner[C any, R Result] struct {
	ctx    context.Context
	sys    System[C, R]
	cfg    Config
	start  time.Time
	out    *Outcome[C, R]
	faults map[string]int // per fault kind and call
	streak int            // consecutive faults, for the backoff
	obs    Observer
	shrunk int // candidates checked while shrinking
}

// DefaultShrinkChecks is Config.MaxShrinkChecks's default: a shrink of
// any kind's case ends in seconds (store checks take a millisecond or
// two; a transfer's or pdasync's a few, and pd.Incremental bounds the
// arenas one opens).
const DefaultShrinkChecks = 1000

// Run checks cfg.Cases generated cases against a system.
func Run[C any, R Result](ctx context.Context, sys System[C, R], cfg Config) *Outcome[C, R] {
	if cfg.MaxShrinks == 0 {
		cfg.MaxShrinks = 500
	}
	if cfg.MaxFaults == 0 {
		cfg.MaxFaults = 3
	}
	if cfg.MaxShrinkChecks == 0 {
		cfg.MaxShrinkChecks = DefaultShrinkChecks
	}
	r := &runner[C, R]{ctx: ctx, sys: sys, cfg: cfg, start: time.Now(), out: &Outcome[C, R]{}, faults: map[string]int{},
		obs: observer(ctx)}
	params := gopter.DefaultTestParametersWithSeed(cfg.Seed)
	params.MinSuccessfulTests = cfg.Cases
	params.MaxShrinkCount = cfg.MaxShrinks
	params.Workers = 1
	prop.ForAll(r.condition, r.generator()).Check(params)
	r.countRace()
	r.confirmFresh()
	r.out.Elapsed = time.Since(r.start)
	return r.out
}

// check checks a case as CheckOnce does.
func (r *runner[C, R]) check(c C) (R, error) { return CheckOnce(r.ctx, r.sys, c) }

// CheckOnce checks a case. A crash of the plugin while it ran the case
// becomes the kind's result when the system is a Crasher, and the plugin
// is restarted for the next case; any other error is returned.
func CheckOnce[C any, R Result](ctx context.Context, sys System[C, R], c C) (R, error) {
	res, err := sys.Check(ctx, c)
	if err == nil {
		return res, nil
	}
	cr, ok := sys.(Crasher[R])
	f, isFault := plugin.AsFault(err)
	if !ok || !isFault || !f.InKernel() || ctx.Err() != nil {
		return res, err
	}
	if rerr := sys.Restart(ctx); rerr != nil {
		return res, fmt.Errorf("restart after the plugin crashed running a case: %w", rerr)
	}
	return cr.Crashed(f), nil
}

// confirmFresh checks the shrunk failure once more in a plugin process
// started for it, and marks a failure that passes there as needing the
// plugin's history. A failure that showed only on some runs gets as many
// tries as confirming it took, each in a process of its own: a second
// check in one process would have the first's history.
func (r *runner[C, R]) confirmFresh() {
	f := r.out.Failure
	if f == nil || f.Flaky || !r.cfg.Fresh || r.out.Fault != nil || r.ctx.Err() != nil {
		return
	}
	defer func(t0 time.Time) { r.out.Fresh = time.Since(t0) }(time.Now())
	for try := 0; try < max(1, f.Tries); try++ {
		if err := r.sys.Restart(r.ctx); err != nil {
			r.out.Fault, r.out.FaultCase = fmt.Errorf("restart to confirm the failure in a fresh plugin process: %w", err), &f.Case
			return
		}
		res, err := r.check(f.Case)
		if err != nil {
			r.fault(err, f.Case)
			return
		}
		f.Fresh, f.NeedsHistory = true, !res.Has(f.Property)
		if !f.NeedsHistory {
			return
		}
	}
}

// generator hands gopter the system's cases with the system's shrinker:
// gopter's own combinators would lose shrinking.
func (r *runner[C, R]) generator() gopter.Gen {
	return func(gp *gopter.GenParameters) *gopter.GenResult {
		return gopter.NewGenResult(r.sys.Draw(gp.Rng), r.shrinker)
	}
}

func (r *runner[C, R]) shrinker(v any) gopter.Shrink {
	cands := r.sys.Shrink(v.(C))
	return func() (any, bool) {
		if len(cands) > 0 && r.shrunk >= r.cfg.MaxShrinkChecks {
			if f := r.out.Failure; f != nil {
				f.ShrinkCut = true
			}
			return nil, false
		}
		if len(cands) == 0 {
			return nil, false
		}
		r.shrunk++
		if f := r.out.Failure; f != nil {
			f.ShrinkChecks = r.shrunk
		}
		c := cands[0]
		cands = cands[1:]
		return c, true
	}
}

// condition is gopter's property: true when the case passes. After the
// first failure it becomes the shrink oracle: a candidate "fails" only if
// it still violates the same property.
func (r *runner[C, R]) condition(c C) bool {
	if r.out.Fault == nil && r.ctx.Err() != nil {
		r.out.Fault, r.out.FaultCase = r.ctx.Err(), &c // cancelled: the run did not pass
	}
	if r.out.Fault != nil {
		return false // stopped: fail fast so gopter ends without calling the plugin
	}
	res, err := r.check(c)
	if err != nil {
		return r.fault(err, c)
	}
	r.streak = 0
	f := r.out.Failure
	if f == nil {
		r.out.Cases++
		r.obs.Checked()
		if !res.Failed() {
			return true
		}
		r.out.ToFailure = time.Since(r.start)
		return r.confirm(c, res)
	}
	if f.Flaky {
		return true
	}
	for try := 1; !res.Has(f.Property) && try < f.Tries; try++ {
		if res, err = r.check(c); err != nil {
			return r.fault(err, c)
		}
	}
	if !res.Has(f.Property) {
		return true
	}
	f.Minimal, f.Case = res, c
	f.Shrinks++
	return false
}

// ConfirmRuns is how many times a first failure is re-run, until one
// fails the same way, before it is called flaky: a store whose padded row
// races a valid row for one slot shows the corruption only when the
// padded write lands last.
const ConfirmRuns = 4

// confirm re-runs a first failure before it is reported, up to
// ConfirmRuns times until a re-run fails the same way.
func (r *runner[C, R]) confirm(c C, res R) bool {
	f := &Failure[C, R]{Original: res, Minimal: res, Case: c, Property: res.Primary()}
	r.out.Failure = f // kept even if the re-run faults: the violation was seen
	if sp, ok := r.sys.(Sparer); ok && r.cfg.Fresh {
		sp.KeepSpare(r.ctx)
	}
	defer func(t0 time.Time) { r.out.Confirming = time.Since(t0) }(time.Now())
	if p, ok := r.sys.(preferrer); ok {
		p.prefer(f.Property)
	}
	confirmed := false
	for !confirmed && f.Reruns < ConfirmRuns {
		again, err := r.check(c)
		if err != nil {
			f.Flaky = true // not confirmed; the fault is reported beside it
			r.fault(err, c)
			return false
		}
		f.Reruns++
		f.Rerun, f.Reran = again, true
		confirmed = again.Has(f.Property)
	}
	f.Tries = f.Reruns
	switch {
	case isRace(res):
		// Two writers of one slot: the structure is the bug, whatever the
		// re-runs showed. Each shrink candidate gets the tries a race
		// needs, and the found case's runs are counted.
		f.Race, f.Tries = true, RaceRuns
		r.count(c, res)
	case !confirmed:
		f.Flaky = true
	}
	return false
}

// count checks c, whose check res showed its race, RaceRuns-1 more times
// and counts the runs that show it: how often the wrong write lands last.
func (r *runner[C, R]) count(c C, res R) {
	f := r.out.Failure
	f.RaceHits, f.RaceRuns = raceShown(res)
	for range RaceRuns - 1 {
		again, err := r.check(c)
		if err != nil {
			r.fault(err, c)
			return
		}
		hits, runs := raceShown(again)
		f.RaceHits, f.RaceRuns = f.RaceHits+hits, f.RaceRuns+runs
	}
}

// countRace counts, when shrinking kept the race, the minimal case's runs
// instead of the found one's; when it did not (it found a smaller case
// that fails every run, as a padded row aimed at another request's slot
// does), the found case's count stands, and RaceShrunk says so.
func (r *runner[C, R]) countRace() {
	f := r.out.Failure
	if f == nil || !f.Race || r.out.Fault != nil || r.ctx.Err() != nil || f.Shrinks == 0 {
		return
	}
	if !isRace(f.Minimal) {
		f.RaceShrunk = true
		return
	}
	r.count(f.Case, f.Minimal)
}

// fault handles a failed call. A plugin fault is recorded with its case,
// and the plugin restarted after a backoff, until the same fault has
// happened MaxFaults times; anything else (a harness error, a cancelled
// run, a plugin that will not restart) stops the run. The case counts as
// neither passed nor failed: gopter is told it passed so that it moves on.
func (r *runner[C, R]) fault(err error, c C) bool {
	f, ok := plugin.AsFault(err)
	if !ok || r.ctx.Err() != nil {
		r.out.Fault, r.out.FaultCase = err, &c
		return false
	}
	r.out.Faults = append(r.out.Faults, FaultEvent[C]{Fault: err, Case: c})
	key := string(f.Kind) + " during " + f.Call
	if r.faults[key]++; r.faults[key] >= r.cfg.MaxFaults {
		r.out.Fault, r.out.FaultCase = fmt.Errorf("the same fault (%s) happened %d times; stopping: %w", key, r.faults[key], err), &c
		return false
	}
	r.streak++
	select {
	case <-time.After(backoff(r.streak)):
	case <-r.ctx.Done():
	}
	if rerr := r.sys.Restart(r.ctx); rerr != nil {
		r.out.Fault, r.out.FaultCase = fmt.Errorf("restart after %s: %w", key, rerr), &c
		return false
	}
	return true
}

// backoff doubles from 100 ms per consecutive fault, up to 2 s.
func backoff(streak int) time.Duration {
	return min(100*time.Millisecond<<min(streak-1, 5), 2*time.Second)
}
