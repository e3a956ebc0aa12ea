package store

import (
	"context"
	"math/rand"
	"slices"

	"github.com/kvharness/kvharness/harness/layout"
	"github.com/kvharness/kvharness/harness/plugin"
	"github.com/kvharness/kvharness/harness/property"
)

// System is the store kernel of a target under one padding convention, as
// a property run drives it.
//
// With a Budget, on a target with sets to spare, it draws cases a window
// at a time and has the target check them ahead (ahead.go): the verdict
// of a drawn case comes from its window when the window was proved, from
// an exact check otherwise. Anything else it is asked to check (a shrunk
// case, a confirmation) is checked exactly.
type System struct {
	Target *Target
	Gen    *Gen
	// Budget is the most cases the property run draws: its case count.
	// Zero checks every case when it is asked about.
	Budget int

	rng    *rand.Rand // the run's source; drawing ahead is drawing from it
	drawn  int        // cases drawn from rng
	size   int        // the next window's size
	most   int        // the largest window
	queue  []*window  // windows with cases not yet handed out, oldest first
	next   int        // queue[0]'s next case to hand out
	out    *window    // the window of the case handed out last
	outIdx int
}

var (
	_ property.System[*Case, *Result] = (*System)(nil)
	_ property.Crasher[*Result]       = (*System)(nil)
)

// NewSystem draws store cases for t under padding p.
func NewSystem(t *Target, p Padding, maxCapacity int) *System {
	return &System{Target: t, Gen: &Gen{Slots: t.Slots, PageSize: t.Layout.PageSize, Padding: p, MaxCapacity: maxCapacity,
		Live: t.live, NonFinite: t.Layout.NonFinite() != layout.NonFiniteUndeclared}}
}

// firstExact is how many cases a target's first row checks exactly
// before the target fills its sets to check ahead on (tens of
// milliseconds on a default pool): a broken kernel fails in them, and its
// report does not wait for the fill.
const firstExact = 8

// ahead reports whether the system checks drawn cases ahead.
func (s *System) ahead() bool { return s.Budget > 0 && s.Target.canAhead() }

// Draw implements property.System. Checking ahead, it draws a window of
// cases at a time from rng, in the order one at a time would, and hands
// them out one by one.
func (s *System) Draw(rng *rand.Rand) *Case {
	if !s.ahead() {
		return s.Gen.Draw(rng)
	}
	if rng != s.rng {
		*s = System{Target: s.Target, Gen: s.Gen, Budget: s.Budget, rng: rng}
		s.Target.exact = 0
		s.size, s.most = s.Target.windows()
	}
	if s.drawn < firstExact && s.Target.fillLater != nil {
		s.drawn++ // the target's sets are not filled yet: check it exactly
		s.out = nil
		return s.Gen.Draw(rng)
	}
	if len(s.queue) == 0 && !s.drawWindow() {
		s.out = nil
		return s.Gen.Draw(rng) // past the budget: checked exactly
	}
	w := s.queue[0]
	s.out, s.outIdx = w, s.next
	if s.next++; s.next == len(w.cases) {
		s.queue, s.next = s.queue[1:], 0
	}
	if len(s.queue) < 2 {
		s.drawWindow() // one window ahead of the one handed out
	}
	return w.cases[s.outIdx]
}

// drawWindow draws the next window, doubling its size up to the most;
// false when the budget is spent.
func (s *System) drawWindow() bool {
	n := min(s.size, s.Budget-s.drawn)
	if n <= 0 {
		return false
	}
	cases := make([]*Case, n)
	for i := range cases {
		cases[i] = s.Gen.Draw(s.rng)
	}
	s.drawn += n
	s.size = min(2*s.size, s.most)
	s.queue = append(s.queue, newWindow(cases))
	return true
}

// Shrink implements property.System. On a pool checked in windows
// (reach.go) it keeps to candidates whose slots are in them: elsewhere a
// sparse GPU arena has no memory, and a host one would materialize pages
// no drawn case names.
func (s *System) Shrink(c *Case) []*Case {
	out := Shrink(c)
	live := s.Target.live
	if live == nil {
		return out
	}
	return slices.DeleteFunc(out, func(x *Case) bool {
		for i, slot := range x.Loc {
			if (i < x.Valid || x.Padding == PadCount) && !live.Contains(slot) {
				return true
			}
		}
		return false
	})
}

// Check implements property.System. The case Draw handed out last gets
// its window's verdict (the window and the next are started first, so
// the target keeps working ahead); any other case, or one of a tainted
// window, an exact check.
func (s *System) Check(ctx context.Context, c *Case) (*Result, error) {
	if w := s.out; w != nil && w.cases[s.outIdx] == c {
		i := s.outIdx
		s.out = nil
		if err := s.Target.fillAhead(); err != nil {
			return nil, err
		}
		if !w.started {
			s.Target.startAhead(ctx, s, w)
		}
		for _, q := range s.queue {
			if !q.started {
				s.Target.startAhead(ctx, s, q)
			}
		}
		<-w.ready
		if err := s.Target.idleFault(); err != nil {
			return nil, err // reported as a fault of the run, the plugin restarted already
		}
		if !w.tainted {
			s.Target.ahead.answered.Add(1)
			if w.results[i].Failed() {
				// The runner confirms and shrinks a failure with exact
				// checks: they run where the case ran, so that a kernel
				// whose bug needs its history of a pool (a cache keyed
				// by pool and slot) fails them as it failed the case.
				s.Target.exact = w.sets[i]
			}
			return w.results[i], nil
		}
	}
	s.out = nil
	return s.Target.Check(ctx, c)
}

// Restart implements property.System.
func (s *System) Restart(ctx context.Context) error {
	s.Target.stopAhead(ctx)
	return s.Target.Plugin.Restart(ctx)
}

// Crashed implements property.Crasher: a store that kills its process
// is a kernel bug, reported with its case and with what a sanitizer saw
// the process do before it died.
func (s *System) Crashed(f *plugin.Fault) *Result {
	r := crashed(f)
	r.Judged = &Judgement{Layout: s.Target.Layout, Mode: s.Target.Value, SlotBits: s.Target.Declared.SlotBits} // the repro file records it as for any case
	r.addFindings(s.Target.Plugin.ExitedFindings())
	return r
}

// KeepSpare implements property.Sparer.
func (s *System) KeepSpare(ctx context.Context) { s.Target.Plugin.KeepSpare(ctx) }
