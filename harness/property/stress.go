package property

import (
	"context"
	"errors"
	"math/rand"
	"sync"
	"sync/atomic"

	"github.com/kvharness/kvharness/harness/oracle"
	"github.com/kvharness/kvharness/harness/plugin"
)

// MaxInFlight is how many plugin processes a stressed case runs on at
// once: enough to keep two cores or a GPU's queues busy with the same
// case, few enough to start quickly.
const MaxInFlight = 4

// stressed is a system whose every check runs the case n times, several
// at once, each on a system of its own plugin process, and fails when
// any run fails. A nondeterministic kernel (a race, a missing
// synchronisation) passes a case now and then when it runs alone; run n
// times under the load of its siblings it fails the case every time it
// can fail it at all, so the search, the confirmation and the shrinking
// all see it.
type stressed[C any, R Result] struct {
	systems []System[C, R] // [0] is the row's own: it draws and shrinks
	n       int
	want    oracle.Kind // once a failure is found: the property a run is looked for with
}

// preferrer is a system that, given the property a failure is confirmed
// and shrunk with, reports a run with that property where one has it: a
// race shows one property in one run (a row missing) and another in the
// next (two runs that differ).
type preferrer interface{ prefer(oracle.Kind) }

func (s *stressed[C, R]) prefer(k oracle.Kind) { s.want = k }

var _ System[int, Result] = (*stressed[int, Result])(nil)

// Draw implements System.
func (s *stressed[C, R]) Draw(rng *rand.Rand) C { return s.systems[0].Draw(rng) }

// Shrink implements System.
func (s *stressed[C, R]) Shrink(c C) []C { return s.systems[0].Shrink(c) }

// Restart implements System: every process is restarted.
func (s *stressed[C, R]) Restart(ctx context.Context) error {
	var errs []error
	for _, sys := range s.systems {
		errs = append(errs, sys.Restart(ctx))
	}
	return errors.Join(errs...)
}

// Crashed implements Crasher when the row's own system does.
func (s *stressed[C, R]) Crashed(f *plugin.Fault) R {
	if cr, ok := s.systems[0].(Crasher[R]); ok {
		return cr.Crashed(f)
	}
	var zero R
	return zero
}

// Check implements System: n runs of c shared among the systems, all of
// them at once. It returns the first error, else the first run (in run
// order) with the property looked for, else the first that failed, else
// the first run.
func (s *stressed[C, R]) Check(ctx context.Context, c C) (R, error) {
	results := make([]R, s.n)
	errs := make([]error, s.n)
	ran := make([]bool, s.n)
	var next atomic.Int64
	var wg sync.WaitGroup
	for _, sys := range s.systems {
		wg.Go(func() {
			for i := int(next.Add(1) - 1); i < s.n; i = int(next.Add(1) - 1) {
				results[i], errs[i] = sys.Check(ctx, c)
				ran[i] = true
				if errs[i] != nil {
					return // this process may be gone; the others finish the runs
				}
			}
		})
	}
	wg.Wait()
	for i := range s.n {
		if errs[i] != nil {
			return results[i], errs[i]
		}
	}
	for _, ok := range []func(R) bool{func(r R) bool { return s.want != "" && r.Has(s.want) }, R.Failed} {
		for i := range s.n {
			if ran[i] && ok(results[i]) {
				return results[i], nil
			}
		}
	}
	return results[0], nil
}
