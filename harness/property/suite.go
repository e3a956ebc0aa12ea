package property

import (
	"cmp"
	"context"
	"errors"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/kvharness/kvharness/harness/layout"
	"github.com/kvharness/kvharness/harness/plugin"
	"github.com/kvharness/kvharness/harness/shard"
	"github.com/kvharness/kvharness/harness/target"
)

// A Target is what a suite row runs on: opened on a plugin, closed when the
// job moves to another target or ends.
type Target interface {
	Close(ctx context.Context)
}

// Row is one combination of a suite: for stores a layout and a padding
// convention, for reads a layout, for transfers a case profile.
type Row[T Target, C any, R Result] struct {
	Layout *layout.Layout // nil when the row has no single layout
	Label  string         // the row's name after its layout: a padding, a profile
	// Key names the target the row runs on: consecutive rows with the same
	// key on one job share one target.
	Key string
	// Open opens the row's target on a plugin.
	Open func(ctx context.Context, p *plugin.Plugin) (T, error)
	// System is the row's property system on an open target.
	System func(T) System[C, R]
	// Cost is the row's expected cost, relative to the other rows':
	// rows run as jobs start in order of it, the costliest first, so
	// that the longest row does not start last and hold the run's end
	// alone. Rows of equal cost (zero, where the kind gives none) keep
	// their order. A serial run ignores it.
	Cost float64
}

// Suite runs a kind's properties over its rows for one plugin.
type Suite[T Target, C any, R Result] struct {
	Plugin    *plugin.Plugin
	Rows      []Row[T, C, R]
	Cases     int   // passing cases wanted per row
	Seed      int64 // row i draws from Seed+i
	MaxFaults int   // see Config.MaxFaults
	// MaxShrinkChecks: see Config.MaxShrinkChecks (0: its default).
	MaxShrinkChecks int
	// StopAtFirst ends the suite at the first failing row (the mutant
	// runner wants time-to-kill, not a full table).
	StopAtFirst bool
	// Jobs rows run at once, each on a plugin process of its own: Plugin
	// and Jobs-1 from Spawn. On the GPU a checked case mostly waits (the
	// RPC, small copies, the scan), so jobs overlap.
	Jobs  int
	Spawn func(context.Context) (*plugin.Plugin, error)
	// Shard is the part of the rows this run checks (check --shard): row
	// i is part i mod n + 1's and draws from Seed+i as in the whole run,
	// so the parts' verdicts together are the whole run's. The zero Spec
	// is every row.
	Shard shard.Spec
	// Spare keeps a spare plugin process for the fresh-process checks of
	// rows that run one after another (plugin.KeepSpare): on a GPU, where
	// a process's start is a CUDA context's creation, a failure's check in
	// a fresh process then waits for none. Rows run as jobs keep none.
	Spare bool
	// Stress runs every case this many times, up to MaxInFlight at once
	// on plugin processes of their own (Spawn starts the others), and
	// fails it when any run fails: a race that a lone run passes fails
	// under the load of its siblings. 0 or 1: each case once.
	Stress int
}

// Verdict is the outcome of one row of a suite.
type Verdict[C any, R Result] struct {
	Layout  *layout.Layout
	Label   string
	Seed    int64
	Outcome *Outcome[C, R]
}

// Run runs every row; it stops early on a plugin fault, which makes the
// rest meaningless. With Jobs > 1 (and Spawn), rows run side by side; the
// verdicts keep the rows' order either way.
func (s *Suite[T, C, R]) Run(ctx context.Context) ([]Verdict[C, R], error) {
	rows := s.owned()
	observer(ctx).Started(len(rows), s.Cases)
	if s.Jobs <= 1 || s.Spawn == nil || s.StopAtFirst || len(rows) <= 1 {
		return s.runSerial(ctx, rows)
	}
	return s.runJobs(ctx, rows)
}

// owned is the indices of the rows the suite's shard checks, in order.
func (s *Suite[T, C, R]) owned() []int {
	var rows []int
	for i := range s.Rows {
		if s.Shard.Owns(i) {
			rows = append(rows, i)
		}
	}
	return rows
}

func (s *Suite[T, C, R]) runSerial(ctx context.Context, rows []int) ([]Verdict[C, R], error) {
	if s.Spare {
		s.Plugin.KeepSpare(ctx)
	}
	var out []Verdict[C, R]
	j := job[T, C, R]{suite: s, p: s.Plugin}
	defer j.end(ctx)
	for _, i := range rows {
		v, err := j.run(ctx, i)
		if err != nil {
			return out, err
		}
		out = append(out, v)
		if v.Outcome.Fault != nil || (s.StopAtFirst && !v.Outcome.Passed()) {
			return out, v.Outcome.Fault
		}
	}
	return out, nil
}

// job is where rows run one after another on one plugin process (and,
// under stress, its siblings): a target per process, reopened when the
// row's key changes.
type job[T Target, C any, R Result] struct {
	suite    *Suite[T, C, R]
	p        *plugin.Plugin
	siblings []*plugin.Plugin // under stress: the other processes, spawned on first use
	t        []T              // the row's target on p, then on each sibling
	key      string
	open     bool
}

// run checks row i on targets of its key.
func (j *job[T, C, R]) run(ctx context.Context, i int) (Verdict[C, R], error) {
	row := j.suite.Rows[i]
	var opening, closing time.Duration
	if !j.open || j.key != row.Key {
		t0 := time.Now()
		j.close(ctx)
		closing = time.Since(t0)
		t0 = time.Now()
		if err := j.openTargets(ctx, row); err != nil {
			if ctx.Err() != nil { // interrupted while opening: the row stopped, as one interrupted mid-run does
				return Verdict[C, R]{Layout: row.Layout, Label: row.Label, Seed: j.suite.Seed + int64(i), Outcome: &Outcome[C, R]{Fault: ctx.Err()}}, nil
			}
			return Verdict[C, R]{}, err
		}
		opening = time.Since(t0)
	}
	seed := j.suite.Seed + int64(i)
	o := Run(ctx, j.system(row), Config{Cases: j.suite.Cases, Seed: seed, MaxFaults: j.suite.MaxFaults, MaxShrinkChecks: j.suite.MaxShrinkChecks, Fresh: j.p.Restartable()})
	name := ""
	if row.Layout != nil {
		name = row.Layout.Name
	}
	d := rowDone(name, row.Label, j.suite.Cases, o)
	d.Open, d.Close = opening, closing
	observer(ctx).Finished(d)
	return Verdict[C, R]{Layout: row.Layout, Label: row.Label, Seed: seed, Outcome: o}, nil
}

// inFlight is how many processes a stressed case runs on.
func (s *Suite[T, C, R]) inFlight() int {
	if s.Stress <= 1 || s.Spawn == nil {
		return 1
	}
	return min(s.Stress, MaxInFlight)
}

// openTargets opens the row's target on the job's process and on each
// sibling, spawning siblings the first time.
func (j *job[T, C, R]) openTargets(ctx context.Context, row Row[T, C, R]) error {
	for len(j.siblings) < j.suite.inFlight()-1 {
		p, err := j.suite.Spawn(ctx)
		if err != nil {
			return err
		}
		j.siblings = append(j.siblings, p)
	}
	j.t = j.t[:0]
	for _, p := range append([]*plugin.Plugin{j.p}, j.siblings...) {
		t, err := row.Open(ctx, p)
		if err != nil {
			j.closeTargets(ctx)
			return err
		}
		j.t = append(j.t, t)
	}
	j.key, j.open = row.Key, true
	return nil
}

// system is the row's system on the job's target, or, under stress, on
// all of them.
func (j *job[T, C, R]) system(row Row[T, C, R]) System[C, R] {
	if j.suite.Stress <= 1 {
		return row.System(j.t[0])
	}
	s := &stressed[C, R]{n: j.suite.Stress}
	for _, t := range j.t {
		s.systems = append(s.systems, row.System(t))
	}
	return s
}

// closeTargets releases the targets. Their detach outlives a cancelled
// run, briefly: a plugin hung in the call the cancel ended must not hold
// the run's exit for a whole call deadline.
func (j *job[T, C, R]) closeTargets(ctx context.Context) {
	cctx := context.WithoutCancel(ctx)
	if ctx.Err() != nil {
		var cancel context.CancelFunc
		cctx, cancel = context.WithTimeout(cctx, closeGrace)
		defer cancel()
	}
	for _, t := range j.t {
		t.Close(cctx)
	}
	j.t, j.open = j.t[:0], false
}

// close releases the targets; end also stops the siblings.
func (j *job[T, C, R]) close(ctx context.Context) {
	if j.open {
		j.closeTargets(ctx)
	}
}

// end closes the job for good: its targets and its sibling processes.
func (j *job[T, C, R]) end(ctx context.Context) {
	j.close(ctx)
	for _, p := range j.siblings {
		p.Close()
	}
	j.siblings = nil
}

// closeGrace bounds the detach of a cancelled run's target.
const closeGrace = 250 * time.Millisecond

// runJobs runs rows (indices into s.Rows) on Jobs plugin processes at
// once: the suite's own and Jobs-1 spawned ones. It reports what a serial
// run would: when row i stops the run (a plugin fault, a target that will
// not open), the rows before i still finish, those after it are cancelled
// and left out, and i's error is returned. The job run's positions count
// in rows.
func (s *Suite[T, C, R]) runJobs(ctx context.Context, rows []int) ([]Verdict[C, R], error) {
	n := len(rows)
	r := &jobRun[T, C, R]{suite: s, rows: rows, verdicts: make([]*Verdict[C, R], n), errs: make([]error, n),
		cancels: map[int]context.CancelFunc{}, stopAt: n, order: s.costliestFirst(rows)}
	var wg sync.WaitGroup
	for k := range min(s.Jobs, n) {
		wg.Go(func() { r.job(ctx, k) })
	}
	wg.Wait()
	var out []Verdict[C, R]
	for i := range min(r.stopAt+1, n) {
		if v := r.verdicts[i]; v != nil {
			out = append(out, *v)
		}
	}
	if r.stopAt < n {
		return out, r.errs[r.stopAt]
	}
	return out, nil
}

// costliestFirst is the positions of rows (indices into s.Rows) in the
// order jobs take them: by Cost, highest first, ties in order.
func (s *Suite[T, C, R]) costliestFirst(rows []int) []int {
	order := make([]int, len(rows))
	for k := range order {
		order[k] = k
	}
	slices.SortStableFunc(order, func(a, b int) int { return cmp.Compare(s.Rows[rows[b]].Cost, s.Rows[rows[a]].Cost) })
	return order
}

// jobRun is the shared state of a parallel run.
type jobRun[T Target, C any, R Result] struct {
	suite    *Suite[T, C, R]
	rows     []int // the suite's rows run, by index; the fields below count in positions of it
	verdicts []*Verdict[C, R]
	errs     []error
	next     atomic.Int64 // the next place in order to take
	order    []int        // positions, in the order jobs take them (costliestFirst)

	mu      sync.Mutex
	cancels map[int]context.CancelFunc // rows running
	stopAt  int                        // the earliest row that stopped the run
}

// job takes rows, costliest first, until none is left; a row after one
// that stopped the run is passed over. A job whose plugin will not spawn
// leaves the work to the others.
func (r *jobRun[T, C, R]) job(ctx context.Context, k int) {
	p := r.suite.Plugin
	if k > 0 {
		var err error
		if p, err = r.suite.Spawn(ctx); err != nil {
			return
		}
		defer p.Close() // after the target below is released
	}
	j := job[T, C, R]{suite: r.suite, p: p}
	defer j.end(ctx)
	for k := int(r.next.Add(1) - 1); k < len(r.rows); k = int(r.next.Add(1) - 1) {
		i := r.order[k]
		cctx, ok := r.start(ctx, i)
		if !ok {
			continue
		}
		v, err := j.run(cctx, r.rows[i])
		if err == nil {
			r.verdicts[i], err = &v, v.Outcome.Fault
		}
		if r.finish(i, err) {
			return
		}
	}
}

// start registers row i as running, with a context that a stop at an
// earlier row cancels; false if the run already stopped before i.
func (r *jobRun[T, C, R]) start(ctx context.Context, i int) (context.Context, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if i > r.stopAt {
		return nil, false
	}
	cctx, cancel := context.WithCancel(ctx)
	r.cancels[i] = cancel
	return cctx, true
}

// finish unregisters row i; when err stops the run there, it cancels every
// later row still running. It reports whether the job should stop.
func (r *jobRun[T, C, R]) finish(i int, err error) bool {
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
	return ok || errors.Is(err, target.ErrUnsupported)
}
