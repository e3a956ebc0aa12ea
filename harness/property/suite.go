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
// own and Jobs-1 spawned ones. It reports what a serial run would: when
// combination i stops the run (a plugin fault, a target that will not
// open), the combinations before i still finish, those after it are
// cancelled and left out, and i's error is returned.
func (s *Suite) runJobs(ctx context.Context, combos []combo) ([]Verdict, error) {
	r := &jobRun{suite: s, combos: combos, verdicts: make([]*Verdict, len(combos)), errs: make([]error, len(combos)),
		cancels: map[int]context.CancelFunc{}, stopAt: len(combos)}
	var wg sync.WaitGroup
	for n := range min(s.Jobs, len(combos)) {
		wg.Go(func() { r.job(ctx, n) })
	}
	wg.Wait()
	var out []Verdict
	for i := range min(r.stopAt+1, len(combos)) {
		if v := r.verdicts[i]; v != nil {
			out = append(out, *v)
		}
	}
	if r.stopAt < len(combos) {
		return out, r.errs[r.stopAt]
	}
	return out, nil
}

// jobRun is the shared state of a parallel run.
type jobRun struct {
	suite    *Suite
	combos   []combo
	verdicts []*Verdict
	errs     []error
	next     atomic.Int64

	mu      sync.Mutex
	cancels map[int]context.CancelFunc // combinations running
	stopAt  int                        // the earliest combination that stopped the run
}

// job takes combinations in order until none is left or the run stopped
// before them. A job whose plugin will not spawn leaves the work to the
// others.
func (r *jobRun) job(ctx context.Context, n int) {
	p := r.suite.Plugin
	if n > 0 {
		var err error
		if p, err = r.suite.Spawn(ctx); err != nil {
			return
		}
		defer p.Close() // after the target below is released
	}
	var j job
	defer j.close(ctx)
	for i := int(r.next.Add(1) - 1); i < len(r.combos); i = int(r.next.Add(1) - 1) {
		cctx, ok := r.start(ctx, i)
		if !ok {
			return
		}
		err := j.target(cctx, r.suite, p, r.combos[i].layout)
		if err == nil {
			v := r.suite.run(cctx, j.t, r.combos[i])
			r.verdicts[i], err = &v, v.Outcome.Fault
		}
		if r.finish(i, err) {
			return
		}
	}
}

// start registers combination i as running, with a context that a stop
// at an earlier combination cancels; false if the run already stopped
// before i.
func (r *jobRun) start(ctx context.Context, i int) (context.Context, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if i > r.stopAt {
		return nil, false
	}
	cctx, cancel := context.WithCancel(ctx)
	r.cancels[i] = cancel
	return cctx, true
}

// finish unregisters combination i; when err stops the run there, it
// cancels every later combination still running. It reports whether the
// job should stop.
func (r *jobRun) finish(i int, err error) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.cancels[i]()
	delete(r.cancels, i)
	if err == nil {
		return false
	}
	r.errs[i] = err
	if i < r.stopAt {
		r.stopAt = i
		for k, cancel := range r.cancels {
			if k > i {
				cancel()
			}
		}
	}
	return true
}

// IsFault reports whether err is a plugin fault rather than a harness error.
func IsFault(err error) bool {
	_, ok := plugin.AsFault(err)
	return ok || errors.Is(err, check.ErrUnsupported)
}
