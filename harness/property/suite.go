package property

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"

	"github.com/kvharness/kvharness/harness/check"
	"github.com/kvharness/kvharness/harness/layout"
	"github.com/kvharness/kvharness/harness/plugin"
	"github.com/kvharness/kvharness/harness/pool"
	"github.com/kvharness/kvharness/harness/workload"
)

// Suite runs the properties for one plugin over layouts × paddings.
type Suite struct {
	Plugin         *plugin.Plugin
	Dir            *pool.Dir
	Variant        string
	Layouts        []*layout.Layout
	Paddings       []workload.Padding
	Cases          int
	Seed           int64
	Slots          int
	MaxCapacity    int
	BackgroundSeed int64
	Backend        check.Backend // nil: host shared memory
	Graph          bool          // replay captured CUDA graphs
	MaxFaults      int           // see Config.MaxFaults
	// StopAtFirst ends the suite at the first failing combination (the
	// mutant runner wants time-to-kill, not a full table).
	StopAtFirst bool
	// Jobs combinations run at once, each on a plugin process of its own:
	// the Plugin above and Jobs-1 from Spawn. On the GPU a checked case
	// mostly waits (the RPC, small copies, the scan), so jobs overlap.
	Jobs  int
	Spawn func(context.Context) (*plugin.Plugin, error)
}

// Verdict is the outcome of one combination of a suite: for stores, a
// layout and a padding convention (the Label).
type Verdict struct {
	Layout  *layout.Layout
	Label   string
	Seed    int64
	Outcome *Outcome
}

// Run runs every combination; it stops early on a plugin fault, which
// makes the rest meaningless. With Jobs > 1 (and Spawn), combinations run
// side by side; the verdicts keep the combinations' order either way.
func (s *Suite) Run(ctx context.Context) ([]Verdict, error) {
	combos := s.combos()
	if s.Jobs <= 1 || s.Spawn == nil || s.StopAtFirst || len(combos) <= 1 {
		return s.runSerial(ctx, combos)
	}
	return s.runJobs(ctx, combos)
}

// combo is one layout × padding combination, by index.
type combo struct{ layout, padding int }

func (s *Suite) combos() []combo {
	var out []combo
	for li := range s.Layouts {
		for pi := range s.Paddings {
			out = append(out, combo{li, pi})
		}
	}
	return out
}

func (s *Suite) runSerial(ctx context.Context, combos []combo) ([]Verdict, error) {
	var out []Verdict
	var j job
	defer j.close(ctx)
	for _, c := range combos {
		if err := j.target(ctx, s, s.Plugin, c.layout); err != nil {
			return out, err
		}
		v := s.run(ctx, j.t, c)
		out = append(out, v)
		if v.Outcome.Fault != nil || (s.StopAtFirst && !v.Outcome.Passed()) {
			return out, v.Outcome.Fault
		}
	}
	return out, nil
}

// run checks one combination on a target of its layout.
func (s *Suite) run(ctx context.Context, t *check.Target, c combo) Verdict {
	seed := s.Seed + int64(c.layout*len(s.Paddings)+c.padding)
	p := s.Paddings[c.padding]
	o := Run(ctx, NewStores(t, p, s.MaxCapacity), Config{Cases: s.Cases, Seed: seed, MaxFaults: s.MaxFaults})
	return Verdict{Layout: s.Layouts[c.layout], Label: p.String(), Seed: seed, Outcome: o}
}

// job is where combinations run one after another: a target, reopened
// when the layout changes.
type job struct {
	t      *check.Target
	layout int
}

func (j *job) target(ctx context.Context, s *Suite, p *plugin.Plugin, layout int) error {
	if j.t != nil && j.layout == layout {
		return nil
	}
	j.close(ctx)
	t, err := check.Open(ctx, p, s.Dir, check.Config{Variant: s.Variant, Layout: s.Layouts[layout], Slots: s.Slots,
		MaxCapacity: s.MaxCapacity, Seed: s.BackgroundSeed, Backend: s.Backend, Graph: s.Graph})
	if err != nil {
		return err
	}
	j.t, j.layout = t, layout
	return nil
}

func (j *job) close(ctx context.Context) {
	if j.t != nil {
		j.t.Close(context.WithoutCancel(ctx))
		j.t = nil
	}
}

// runJobs runs combinations on Jobs plugin processes at once: the suite's
// own and Jobs-1 spawned ones. A fault in one stops the others; runs that
// only stopped for it are left out, as a serial run would never have
// started them.
func (s *Suite) runJobs(parent context.Context, combos []combo) ([]Verdict, error) {
	ctx, cancel := context.WithCancel(parent)
	defer cancel()
	verdicts := make([]*Verdict, len(combos))
	stop := &firstFault{at: len(combos)}
	var next atomic.Int64
	var wg sync.WaitGroup
	for n := range min(s.Jobs, len(combos)) {
		wg.Go(func() {
			p, err := s.jobPlugin(ctx, n)
			if err != nil {
				stop.set(len(combos), err, cancel)
				return
			}
			var j job
			defer j.close(ctx)
			for i := int(next.Add(1) - 1); i < len(combos) && ctx.Err() == nil; i = int(next.Add(1) - 1) {
				if err := j.target(ctx, s, p, combos[i].layout); err != nil {
					stop.set(i, err, cancel)
					return
				}
				v := s.run(ctx, j.t, combos[i])
				if f := v.Outcome.Fault; f != nil && errors.Is(f, context.Canceled) && parent.Err() == nil {
					return // stopped by another job's fault
				}
				verdicts[i] = &v
				if v.Outcome.Fault != nil {
					stop.set(i, v.Outcome.Fault, cancel)
					return
				}
			}
		})
	}
	wg.Wait()
	var out []Verdict
	for _, v := range verdicts {
		if v != nil {
			out = append(out, *v)
		}
	}
	return out, stop.err
}

// jobPlugin is job n's plugin: the suite's for the first job, a new
// process for the others, closed when the run's context ends.
func (s *Suite) jobPlugin(ctx context.Context, n int) (*plugin.Plugin, error) {
	if n == 0 {
		return s.Plugin, nil
	}
	p, err := s.Spawn(ctx)
	if err != nil {
		return nil, err
	}
	context.AfterFunc(ctx, p.Close)
	return p, nil
}

// firstFault keeps the error of the earliest combination that stopped a
// parallel run, so that the error reported does not depend on timing.
type firstFault struct {
	mu  sync.Mutex
	at  int
	err error
}

func (f *firstFault) set(at int, err error, cancel func()) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.err == nil || at < f.at {
		f.at, f.err = at, err
	}
	cancel()
}

// IsFault reports whether err is a plugin fault rather than a harness error.
func IsFault(err error) bool {
	_, ok := plugin.AsFault(err)
	return ok || errors.Is(err, check.ErrUnsupported)
}
