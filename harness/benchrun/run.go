package benchrun

import (
	"context"
	"fmt"
	"time"

	"github.com/kvharness/kvharness/harness/arena"
	"github.com/kvharness/kvharness/harness/kind"
	"github.com/kvharness/kvharness/harness/plugin"
	"github.com/kvharness/kvharness/harness/results"
	"github.com/kvharness/kvharness/harness/rundir"
	"github.com/kvharness/kvharness/harness/shard"
)

// Runner runs a matrix against plugins: Plan, then Run.
type Runner struct {
	Matrix Matrix
	// Kind is the kind the matrix measures (Matrix.Kernel's): its Bench
	// says which cells a unit has and times them.
	Kind     *kind.Kind
	Shard    shard.Spec // the part of the matrix to run; zero: all of it
	Dir      *rundir.Dir
	Backend  arena.Backend
	OnGPU    bool               // graph mode needs it; graph cells are skipped on the CPU
	Journal  *results.LogWriter // runs.jsonl: every finished run, synced
	Previous []results.Run      // runs of an earlier, resumed night
	Env      results.Env
	PeakGBps float64
	Observer Observer // nil: quiet
	Start    func(ctx context.Context, name string) (*plugin.Plugin, error)

	done    map[results.RunKey]bool
	batches map[results.Key]int // a batched cell's batch size, fixed by its first run
	runs    []results.Run
	byCell  map[results.Key][]results.Run
}

// An Observer is told how a night goes, as it goes: a progress display.
// Its methods are called from the goroutine that runs the night.
type Observer interface {
	// Planned says how many runs the night takes, done of them already
	// in the journal of a resumed night.
	Planned(total, done int)
	// Ran is called after each run is journalled.
	Ran(run results.Run)
	// CellDone is called when a cell's last run is in, with the cell of
	// all of them.
	CellDone(c results.Cell)
}

// A Night is what Run measured.
type Night struct {
	Cells   []results.Cell // the plan's cells, in plan order, each of every run it has
	Dropped []results.Run  // resumed runs of cells the plan does not make
	// Lacking names the cells without the data a comparison needs: fewer
	// runs than passes, or fewer samples than their criterion's minimum.
	Lacking []error
}

// Plan describes every plugin of the matrix and lays out its cells and
// the units of r.Shard.
func (r *Runner) Plan(ctx context.Context) (*Plan, error) {
	b, err := r.bench()
	if err != nil {
		return nil, err
	}
	if b.Validate != nil {
		if err := b.Validate(r.setup()); err != nil {
			return nil, err
		}
	}
	var plugins []described
	for _, name := range r.Matrix.Plugins {
		d, err := r.describe(ctx, b, name)
		if err != nil {
			return nil, err
		}
		plugins = append(plugins, d)
	}
	return plan(r.Matrix, b, plugins, r.OnGPU, r.Shard)
}

// bench is the kind's Bench, which must be the matrix's kernel's.
func (r *Runner) bench() (*kind.Bench, error) {
	switch {
	case r.Kind == nil || r.Kind.Name != r.Matrix.Kernel:
		return nil, fmt.Errorf("the runner's kind is not the matrix's kernel %s", r.Matrix.Kernel)
	case r.Kind.Bench == nil:
		return nil, fmt.Errorf("kvharness bench does not measure %s kernels", r.Kind.Name)
	}
	return r.Kind.Bench, nil
}

// setup is what the matrix asks of every group, on the run's backend.
func (r *Runner) setup() kind.BenchSetup { return r.Matrix.Setup(r.Backend) }

func (r *Runner) describe(ctx context.Context, b *kind.Bench, name string) (described, error) {
	p, err := r.Start(ctx, name)
	if err != nil {
		return described{}, err
	}
	defer p.Close()
	desc, err := p.Describe(ctx, r.describeRequest())
	if err != nil {
		return described{}, err
	}
	k := r.Matrix.Kernel
	if !desc.Serves(k) {
		return described{}, fmt.Errorf("plugin %s has no %s kernel (it serves %v): kvharness bench --kernel %s measures %s kernels; drop it from the matrix's plugins",
			name, k, desc.Kernels, k, k)
	}
	groups, err := b.Groups(desc, r.setup())
	return described{name, desc, groups}, err
}

func (r *Runner) describeRequest() plugin.Query {
	m := r.Matrix
	return plugin.Query{Variant: m.Variant, HeadDim: m.HeadDim, PageSize: m.PageSize}
}

// Run measures the plan's cells in passes: each pass starts every plugin
// afresh and takes one run of each of its cells, runs already in the
// journal (Previous) excepted. It returns the night's cells, even after
// an error (those with at least one run).
func (r *Runner) Run(ctx context.Context, p *Plan) (*Night, error) {
	r.done, r.batches, r.byCell = map[results.RunKey]bool{}, map[results.Key]int{}, map[results.Key][]results.Run{}
	wanted := map[results.Key]bool{}
	for _, id := range p.Cells() {
		wanted[id.Key()] = true
	}
	night := &Night{}
	for _, run := range r.Previous {
		if !wanted[run.Identity.Key()] {
			night.Dropped = append(night.Dropped, run)
			continue
		}
		r.keep(run)
	}
	if r.Observer != nil {
		r.Observer.Planned(len(p.Cells())*r.Matrix.passes(), len(r.runs))
	}
	var runErr error
	for pass := 1; pass <= r.Matrix.passes() && runErr == nil; pass++ {
		runErr = r.pass(ctx, p, pass)
	}
	cells, err := r.assemble(p)
	night.Cells = cells
	if runErr != nil {
		return night, runErr
	}
	night.Lacking = lacking(cells, r.Matrix)
	return night, err
}

// keep adds a run to the night's.
func (r *Runner) keep(run results.Run) {
	r.done[run.Key()] = true
	r.runs = append(r.runs, run)
	r.byCell[run.Identity.Key()] = append(r.byCell[run.Identity.Key()], run)
	r.noteBatch(run)
}

func (r *Runner) noteBatch(run results.Run) {
	if _, ok := r.batches[run.Identity.Key()]; !ok {
		r.batches[run.Identity.Key()] = run.BatchSize
	}
}

// pass runs one pass over the plan's groups, a plugin process per plugin.
func (r *Runner) pass(ctx context.Context, p *Plan, pass int) error {
	for start := 0; start < len(p.groups); {
		end := start + 1
		for end < len(p.groups) && p.groups[end].plugin.name == p.groups[start].plugin.name {
			end++
		}
		if err := r.passPlugin(ctx, p.groups[start:end], pass, start); err != nil {
			return err
		}
		start = end
	}
	return nil
}

func (r *Runner) passPlugin(ctx context.Context, groups []*groupPlan, pass, first int) error {
	if !r.todo(groups, pass) {
		return nil
	}
	name := groups[0].plugin.name
	pl, err := r.Start(ctx, name)
	if err != nil {
		return err
	}
	defer pl.Close()
	if _, err := pl.Describe(ctx, r.describeRequest()); err != nil {
		return err
	}
	for i, g := range groups {
		if err := r.passGroup(ctx, pl, g, pass, first+i); err != nil {
			return fmt.Errorf("%s %s pass %d: %w", name, g.group.Name, pass, err)
		}
	}
	return nil
}

// todo reports whether any cell of groups lacks its run of pass.
func (r *Runner) todo(groups []*groupPlan, pass int) bool {
	for _, g := range groups {
		for _, id := range g.cells {
			if !r.done[results.RunKey{Cell: id.Key(), Pass: pass}] {
				return true
			}
		}
	}
	return false
}

func (r *Runner) passGroup(ctx context.Context, pl *plugin.Plugin, g *groupPlan, pass, index int) error {
	if !r.todo([]*groupPlan{g}, pass) {
		return nil
	}
	a, err := r.Kind.Bench.Open(ctx, pl, r.Dir, g.group, r.setup())
	if err != nil {
		return err
	}
	defer a.Close(ctx)
	if err := warm(ctx, a, g.identity(r.Matrix, string(r.Matrix.Kernel), r.Matrix.maxTokens(), results.Eager, results.Hot, results.PerLaunch)); err != nil {
		return err
	}
	return r.interleave(ctx, a, order(g.cells, r.Matrix.Seed, pass, index), pass)
}

// interleave takes one run of each cell not yet done in pass, the cells
// taking turns a chunk at a time, in the pass's order, until each run's
// stopping rule ends it; each finished run is journalled at once.
func (r *Runner) interleave(ctx context.Context, a kind.BenchTarget, cells []results.Identity, pass int) error {
	type turn struct {
		id results.Identity
		s  *sampler
	}
	var turns []turn
	for _, id := range cells {
		if r.done[results.RunKey{Cell: id.Key(), Pass: pass}] {
			continue
		}
		s, err := newSampler(ctx, a, id, r.Matrix.Criterion(id).PerPass(r.Matrix.passes()), r.batches[id.Key()])
		if err != nil {
			return fmt.Errorf("cell %s: %w", id.Name(), err)
		}
		turns = append(turns, turn{id, s})
	}
	for len(turns) > 0 {
		var next []turn
		for _, t := range turns {
			done, err := t.s.step(ctx)
			if err != nil {
				return fmt.Errorf("cell %s: %w", t.id.Name(), err)
			}
			if !done {
				next = append(next, t)
				continue
			}
			if err := r.record(t.id, pass, t.s.result()); err != nil {
				return err
			}
		}
		turns = next
	}
	return nil
}

// warmTime is how long a group runs its largest launch before measuring:
// the first cells of a pass otherwise pay for cold caches, lazy page
// mapping and clock ramp-up, and would differ from the other passes' for
// no reason of the kernel's.
const warmTime = 100 * time.Millisecond

// warm runs id's launch for about warmTime before its group is measured.
// The launches the first sample's time says fill warmTime are run in
// chunks that double, until they are run or warmTime has passed on the
// clock: a launch's timed part can be a small share of what it costs (a
// pdasync transfer's engine time is half a millisecond of the five its
// RPCs and resets take), and the count alone made the warm-up ten times
// warmTime.
func warm(ctx context.Context, a kind.BenchTarget, id results.Identity) error {
	t, err := a.Time(ctx, id, kind.Chunk{Warmup: 1, Iterations: 1, Batch: 1})
	if err != nil {
		return err
	}
	if len(t.Ns) == 0 {
		return fmt.Errorf("cell %s: the plugin timed no launch", id.Name())
	}
	left := clamp(int(float64(warmTime)/max(t.Ns[0], 1)), 1, 100000)
	end := time.Now().Add(warmTime)
	for chunk := 1; left > 0; chunk *= 2 {
		n := min(chunk, left)
		if _, err := a.Time(ctx, id, kind.Chunk{Warmup: n, Iterations: 1, Batch: 1}); err != nil {
			return err
		}
		if left -= n; time.Now().After(end) {
			break
		}
	}
	return nil
}

// record journals the run of id in pass.
func (r *Runner) record(id results.Identity, pass int, s sampled) error {
	id.BatchSize = s.batch
	run := results.Run{Schema: results.RunSchema, Identity: id, Pass: pass, Stop: s.stop, HostPaced: s.hostPaced,
		Device: s.dev, Time: time.Now().UTC(), Samples: s.ns}
	if err := r.Journal.AppendRun(run); err != nil {
		return err
	}
	r.keep(run)
	r.observe(run)
	return nil
}

// observe tells the observer of a run, and of its cell when the run was
// the cell's last.
func (r *Runner) observe(run results.Run) {
	if r.Observer == nil {
		return
	}
	r.Observer.Ran(run)
	runs := r.byCell[run.Identity.Key()]
	if len(runs) != r.Matrix.passes() {
		return
	}
	if c, err := results.NewCell(runs, r.Matrix.quantiles(), r.Matrix.Criterion(run.Identity)); err == nil {
		r.Observer.CellDone(c)
	}
}

// assemble makes the cells of the plan from the runs taken, in plan
// order; a cell without any run is left out.
func (r *Runner) assemble(p *Plan) ([]results.Cell, error) {
	byKey := map[results.Key][]results.Run{}
	for _, run := range r.runs {
		byKey[run.Identity.Key()] = append(byKey[run.Identity.Key()], run)
	}
	var cells []results.Cell
	for _, g := range p.groups {
		out, err := r.assembleGroup(g, byKey)
		if err != nil {
			return cells, err
		}
		cells = append(cells, out...)
	}
	return cells, nil
}

func (r *Runner) assembleGroup(g *groupPlan, byKey map[results.Key][]results.Run) ([]results.Cell, error) {
	byID := map[results.Key]results.Cell{}
	var out []results.Cell
	for _, id := range g.cells {
		runs := byKey[id.Key()]
		if len(runs) == 0 {
			continue
		}
		c, err := results.NewCell(runs, r.Matrix.quantiles(), r.Matrix.Criterion(id))
		if err != nil {
			return out, err
		}
		r.finish(&c, g.group, runs)
		if cp, ok := byID[withKernel(id, results.KernelCopy, id.Tokens, results.Eager).Key()]; ok && !results.IsReference(id.Kernel) {
			c.CopyNs, c.CopyGBps = cp.Summary.P50, cp.GBps
			pairRuns(&c, cp)
		}
		if err := c.Derive(); err != nil && id.Kernel != results.KernelEmpty {
			return out, err
		}
		byID[id.Key()] = c
		out = append(out, c)
	}
	return out, nil
}

// pairRuns gives each run of a kernel the median of its copy's run of the
// same pass.
func pairRuns(c *results.Cell, cp results.Cell) {
	byPass := map[int]float64{}
	for _, r := range cp.Runs {
		byPass[r.Pass] = r.Summary.P50
	}
	for i := range c.Runs {
		c.Runs[i].CopyNs = byPass[c.Runs[i].Pass]
	}
}

// finish fills what a cell takes from the night rather than its runs.
func (r *Runner) finish(c *results.Cell, g kind.BenchGroup, runs []results.Run) {
	c.BytesPerLaunch, c.PeakGBps, c.Env = r.Kind.Bench.Bytes(g, c.Identity), r.PeakGBps, r.Env
	if dev := runs[0].Device; dev != "" {
		c.Env.Device = dev
	}
	if !r.Matrix.KeepSamples {
		c.Samples = nil
	}
}

// lacking names the cells a comparison cannot judge: fewer runs than the
// matrix's passes, or fewer samples than their criterion's minimum.
func lacking(cells []results.Cell, m Matrix) []error {
	var out []error
	for i := range cells {
		c := &cells[i]
		switch err := c.Stop.Enough(); {
		case len(c.Runs) < m.passes():
			out = append(out, fmt.Errorf("cell %s: %d runs of %d", c.Key(), len(c.Runs), m.passes()))
		case err != nil:
			out = append(out, fmt.Errorf("cell %s: %w", c.Key(), err))
		}
	}
	return out
}
