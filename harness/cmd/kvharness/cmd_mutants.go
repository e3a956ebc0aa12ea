package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/spf13/pflag"

	"github.com/kvharness/kvharness/harness/arena"
	"github.com/kvharness/kvharness/harness/arena/shm"
	"github.com/kvharness/kvharness/harness/internal/textsafe"
	"github.com/kvharness/kvharness/harness/kernels"
	"github.com/kvharness/kvharness/harness/kind"
	"github.com/kvharness/kvharness/harness/layout"
	"github.com/kvharness/kvharness/harness/mutants"
	"github.com/kvharness/kvharness/harness/plugin"
	"github.com/kvharness/kvharness/harness/pool"
	"github.com/kvharness/kvharness/harness/protocol"
	"github.com/kvharness/kvharness/harness/report"
	"github.com/kvharness/kvharness/harness/workload"
)

const mutantsExamples = `  kvharness mutants
  kvharness mutants --plugin fp8store --cases 5000
  kvharness mutants --plugin ./my-plugin.json --junit mutants.xml
`

func runMutants(ctx context.Context, e *env, args []string) int {
	fs := flags("mutants", "[--plugin P]... [flags]", mutantsExamples, e)
	names := fs.StringSlice("plugin", plugin.UnderTestNames(), "plugins whose controls and variants to run")
	cfg := mutants.Config{Setup: kind.Setup{PageSize: layout.DefaultPageSize}}
	fs.IntVar(&cfg.Cases, "cases", 1000, "largest per-combination budget: controls run this many, mutants escalate 20, 200, then this")
	fs.Int64Var(&cfg.Seed, "seed", 1, "seed")
	fs.IntVar(&cfg.Slots, "slots", 0, "slots in the pool (0: each kernel's default: "+kernels.SlotsHelp()+")")
	fs.IntVar(&cfg.MaxCapacity, "max-capacity", 512, "largest batch capacity drawn")
	noTimes := fs.Bool("no-times", false, "leave wall times out of the table (for golden files)")
	backend := fs.String("backend", "auto", "cpu, cuda or auto (see check --help)")
	noMTLS := fs.Bool("no-mtls", false, "no mutual TLS on the plugin channel (see check --help)")
	device := fs.Int("device", 0, "CUDA device ordinal")
	fs.BoolVar(&cfg.Graph, "graph", false, "replay stores from captured CUDA graphs")
	fs.IntVar(&cfg.HeadDim, "head-dim", layout.DefaultHeadDim, "head dimension D (default: 128, or the fixed head dim of the layouts a plugin declares none at 128 for)")
	value := fs.String("value", "recipe", valueUsage+"; mutants only: controls are judged by their recipes")
	showTimings := fs.Bool("timings", false, "print where each subject's time went after the table, on stderr: its process's start (or the wait for one started ahead), each row's opening and cases up to the kill")
	junitFile := fs.String("junit", "", junitUsage)
	if code, ok := parse(fs, args); !ok {
		return code
	}
	want, err := checkMutants(fs, cfg, *names, *backend, *device)
	if err != nil {
		return e.errorf("%v", err)
	}
	if cfg.Value, err = parseValue(*value); err != nil {
		return e.errorf("%v", err)
	}
	if err := checkJUnitFile(*junitFile); err != nil {
		return e.errorf("%v", err)
	}
	start := time.Now()
	g := progressOn(e, "mutants", "subjects")
	cfg.Draw = workload.Axes{HeadDim: !fs.Changed("head-dim"), PageSize: true, Heads: true}
	cfg.Far = cfg.Slots == 0
	run := subjectRun{want: want, tr: trust{noMTLS: *noMTLS}, anyDim: !fs.Changed("head-dim"),
		skipUnserved: !fs.Changed("plugin"), eager: &graphSkips{}}
	if *showTimings {
		run.times = &subjectTimes{}
	}
	results, skipped, err := run.all(ctx, g, *names, cfg)
	g.done()
	if code, stop := resourceError(e, err, "--slots", cfg.Slots); stop {
		return code
	}
	if err != nil && !interrupted(ctx) {
		if len(results) > 0 { // what finished before the error is reported, not lost
			mutants.WriteTable(e.stdout, results, !*noTimes)
			fmt.Fprintf(e.stdout, "\n(the run stopped at an error after %d subjects; the rest did not run)\n", len(results))
		}
		return e.errorf("%v", err)
	}
	mutants.WriteTable(e.stdout, results, !*noTimes)
	mutants.WriteSummary(e.stdout, results, !*noTimes)
	if cfg.Value == layout.Exact {
		fmt.Fprintln(e.stdout, "(mutants' fp8 values judged bit-exact; controls' by their declared recipes)")
	}
	run.times.write(e.stderr)
	for _, s := range skipped {
		fmt.Fprintf(e.stdout, "(%s not run: --backend cuda: the plugin has no CUDA kernel (it serves %v))\n", s.name, s.served)
	}
	run.eager.write(e.stdout)
	if err := writeJUnit(*junitFile, "kvharness mutants", mutantsSuite(results, start)); err != nil {
		return e.errorf("%v", err)
	}
	if interrupted(ctx) {
		fmt.Fprintf(e.stderr, "\nkvharness: interrupted: %d subjects finished and are reported; the rest did not run\n", len(results))
		return exitInterrupted
	}
	for _, r := range results {
		if !r.OK() {
			return exitViolation
		}
	}
	return exitPass
}

// checkMutants refuses flags no mutants run means, and reads the
// backend the run wants.
func checkMutants(fs *pflag.FlagSet, cfg mutants.Config, names []string, backend string, device int) (arena.Want, error) {
	if fs.NArg() > 0 {
		return arena.Want{}, noArgs(fs)
	}
	if err := checkCaseFlags(cfg.Cases, cfg.Slots, cfg.HeadDim, "each kernel's"); err != nil {
		return arena.Want{}, err
	}
	if err := kernels.CheckParams(kind.Params{Padding: "all", Setup: cfg.Setup}); err != nil {
		return arena.Want{}, err
	}
	want, err := arena.ParseWant(backend, device)
	if err != nil {
		return want, err
	}
	if len(names) == 0 {
		return want, fmt.Errorf("--plugin: give at least one plugin (%s)", quoteList(plugin.UnderTestNames()))
	}
	return want, nil
}

// subjectRun is how one mutants run reaches its plugins. skipUnserved (no
// --plugin given) passes over a bundled plugin that does not serve a
// --backend cuda the user insisted on (a CPU-only example), where one the
// user named is an error.
type subjectRun struct {
	want         arena.Want
	tr           trust
	anyDim       bool // no --head-dim given: a plugin may run at its layouts' fixed head dim
	skipUnserved bool
	times        *subjectTimes // --timings; nil: none kept
	eager        *graphSkips   // subjects --graph passed over: kinds that run eagerly
	ahead        ahead         // how subjects start ahead; the zero value: the backend's (aheadOn)
}

// ahead is how a run starts subjects ahead of the one running: n
// processes at most, each warming its subject's first row (kind.Kind.Warm)
// when warm is set.
type ahead struct {
	n    int
	warm bool
}

// aheadOn is how subjects start ahead on backend b. On a GPU, several, each
// compiling its first row's CUDA kernels as it waits: a subject's variant
// compiles kernels of its own, a cold NVRTC compile (1.1-1.5 s measured on
// an H100) takes longer than finding a mutant at its first case, and the
// compiles of several subjects overlap on the machine's cores. On the CPU,
// where nothing compiles, one: its process's start.
func aheadOn(b arena.Backend) ahead {
	if b.Place().OnDevice() {
		return ahead{n: 3, warm: true}
	}
	return ahead{n: 1}
}

// graphSkips counts, by plugin and kernel, the subjects a --graph run
// passed over (reads, transfers and loads replay no store graph), so the
// run says what it did not check rather than leaving them out unsaid.
type graphSkips struct {
	order []string
	n     map[string]int
}

func (g *graphSkips) add(plugin string, k protocol.Kernel) {
	key := plugin + " " + string(k)
	if g.n == nil {
		g.n = map[string]int{}
	}
	if g.n[key] == 0 {
		g.order = append(g.order, key)
	}
	g.n[key]++
}

// write prints a line per plugin and kernel passed over.
func (g *graphSkips) write(w io.Writer) {
	for _, key := range g.order {
		plugin, k, _ := strings.Cut(key, " ")
		fmt.Fprintf(w, "(%s's %d %s subjects not run: --graph replays stores only; run mutants --plugin %s without --graph for them)\n", plugin, g.n[key], k, plugin)
	}
}

// unserved is a plugin passed over for the backend, and what it serves.
type unserved struct {
	name   string
	served []protocol.Backend
}

// all runs every plugin's controls and variants, reporting each as it
// finishes; on an interrupt it returns the results so far.
func (r subjectRun) all(ctx context.Context, g *progress, names []string, cfg mutants.Config) ([]mutants.Result, []unserved, error) {
	if err := r.named(ctx, names, cfg); err != nil {
		return nil, nil, err
	}
	var results []mutants.Result
	var skipped []unserved
	for _, name := range names {
		rs, skip, err := r.of(ctx, g, name, cfg)
		results = append(results, rs...)
		if skip != nil {
			skipped = append(skipped, *skip)
		}
		if err != nil {
			return results, skipped, err
		}
	}
	return results, skipped, nil
}

// named checks, before any subject runs, that each plugin the user named
// (--plugin) starts, describes itself and serves the backend asked for:
// a name that leads nowhere, or a CPU-only plugin under --backend cuda,
// is an error now rather than after the plugins before it ran for
// minutes. Bundled plugins taken by default are skipped when unserved
// (skipUnserved) and need no probe here.
func (r subjectRun) named(ctx context.Context, names []string, cfg mutants.Config) error {
	if r.skipUnserved {
		return nil
	}
	for _, name := range names {
		probe, err := probeLayouts(ctx, name, r.tr, &cfg, r.anyDim)
		if err != nil {
			return err
		}
		if r.want.Backend == arena.WantCUDA && !slices.Contains(probe.desc.Backends, protocol.BackendCUDA) {
			return fmt.Errorf("%w: --backend cuda: plugin %s has no CUDA kernel (it serves %v); leave it out of --plugin, or run it with --backend cpu",
				arena.ErrBackend, name, probe.desc.Backends)
		}
	}
	return nil
}

// of runs one plugin's controls and variants, a fresh process each, so
// one variant's state cannot leak into the next.
func (r subjectRun) of(ctx context.Context, g *progress, name string, cfg mutants.Config) ([]mutants.Result, *unserved, error) {
	probe, err := probeLayouts(ctx, name, r.tr, &cfg, r.anyDim)
	if err != nil {
		return nil, nil, err
	}
	subjects := mutants.Subjects(name, probe.desc)
	layouts, lerr, served := probe.layouts, probe.lerr, probe.desc.Backends
	if r.skipUnserved && r.want.Backend == arena.WantCUDA && !slices.Contains(served, protocol.BackendCUDA) {
		return nil, &unserved{name: name, served: served}, nil
	}
	b, release, err := r.want.Choose(served)
	if err != nil {
		return nil, nil, err
	}
	defer release()
	if cfg.Graph && !b.Place().OnDevice() {
		return nil, nil, fmt.Errorf("--graph needs the cuda backend; %s runs on the cpu backend here", name)
	}
	cfg.Backend = b
	g.grow(len(subjects))
	tune := onGPU(r.want)
	plan := r.ahead
	if plan.n == 0 {
		plan = aheadOn(b)
	}
	var warm warmFunc
	if plan.warm {
		warm = warmFirstRow(name, cfg, layouts, lerr)
	}
	q := newLookahead(plan.n, len(subjects), func(i int) *prestart { return r.prestart(ctx, name, subjects[i], cfg, tune, warm) })
	defer q.drop() // the processes started ahead of subjects that will not run now must not outlive the run
	var out []mutants.Result
	for i, s := range subjects {
		cur := q.take(i)
		res, ok, err := runSubject(r.times.observe(ctx, name, s), name, s, cfg, layouts, lerr, r.tr, tune, cur)
		if err != nil || ctx.Err() != nil {
			return out, nil, err
		}
		var se *shm.SpaceError
		if errors.As(res.Err, &se) || errors.Is(res.Err, pool.ErrTooLarge) {
			// The machine, not the subject: every other subject would
			// fail the same way. It is the run's error, as check's is.
			return out, nil, res.Err
		}
		g.step(1)
		if ok {
			out = append(out, res)
			g.line("%s", subjectLine(res))
		} else if r.eager != nil {
			r.eager.add(name, s.Kernel)
		}
	}
	return out, nil, nil
}

// prestart is a subject's session, started while earlier subjects run: a
// subject's time to kill then holds no process start, on a GPU no CUDA
// context's creation either (its process opens the GPU as it starts,
// protocol.WarmGPUEnv), which was most of a GPU mutant's time, and, when
// warmed, no compile of its first row's kernels.
type prestart struct {
	done   chan struct{}
	cancel context.CancelFunc // ends the start and warm-up of one dropped
	s      *session
	err    error
	warmed time.Duration // how long the warm-up took, when it ran and passed
	cold   error         // why a warm-up failed: its process was closed, the subject starts its own
}

// prestart starts subject s's session in the background, warming it with
// warm when not nil; nil for a subject the run will skip (runSubject opens
// it then, or not at all).
func (r subjectRun) prestart(ctx context.Context, name string, s mutants.Subject, cfg mutants.Config, tune func(*plugin.Options), warm warmFunc) *prestart {
	if k, err := kernels.Lookup(s.Kernel); err != nil || cfg.Graph && !k.Graphs {
		return nil
	}
	opts := tune
	if tune != nil {
		opts = func(o *plugin.Options) {
			tune(o)
			o.Env = append(o.Env, o.SpareEnv...) // the spare's warm-up: open the GPU now
		}
	}
	ctx, cancel := context.WithCancel(ctx)
	p := &prestart{done: make(chan struct{}), cancel: cancel}
	go func() {
		defer close(p.done)
		p.s, p.err = openTrusted(ctx, name, s.Variant, cfg.HeadDim, cfg.PageSize, plugin.DefaultCallTimeout, r.tr, opts)
		if p.err != nil || warm == nil {
			return
		}
		t0 := time.Now()
		ran, err := warm(ctx, p.s, s)
		if err != nil {
			// Whatever the warm-up met, the subject's check meets afresh
			// and reports as a run without warm-ups would: in a process
			// of its own, not in one the warm-up may have broken.
			p.s.close()
			p.s, p.cold = nil, err
			return
		}
		if ran {
			p.warmed = max(time.Since(t0), time.Nanosecond)
		}
	}()
	return p
}

// take waits for the session; nil p gives nil. A nil session with a nil
// error is one whose warm-up failed: the subject opens its own.
func (p *prestart) take() (*session, error) {
	if p == nil {
		return nil, nil
	}
	<-p.done
	p.cancel()
	return p.s, p.err
}

// drop closes a session started for a subject that will not run,
// cutting its start or warm-up short.
func (p *prestart) drop() {
	if p == nil {
		return
	}
	p.cancel()
	if s, _ := p.take(); s != nil {
		s.close()
	}
}

// warmFunc warms subject s's session for its check; ran is false where
// there was nothing to warm.
type warmFunc func(ctx context.Context, sess *session, s mutants.Subject) (ran bool, err error)

// warmFirstRow warms a subject's session by its kind's Warm: the target of
// the first row of the subject's first round (mutants.Run's first seed)
// opened and closed, so the row finds its kernels compiled.
func warmFirstRow(name string, cfg mutants.Config, layouts []*layout.Layout, lerr error) warmFunc {
	return func(ctx context.Context, sess *session, s mutants.Subject) (bool, error) {
		k, err := kernels.Lookup(s.Kernel)
		if err != nil || k.Warm == nil || k.Layouts && lerr != nil {
			return false, nil // runSubject reports these
		}
		if k.Layouts {
			if layouts, _, err = subjectLayouts(sess, s, cfg, layouts); err != nil {
				return false, err
			}
		}
		// The budget opens nothing; the first round's seed draws the
		// rows' shapes and backgrounds.
		return true, k.Warm(ctx, sess.kind(s.Plugin), subjectParams(k, s, cfg, layouts, cfg.Cases, cfg.Seed, 0))
	}
}

// lookahead keeps up to n processes started ahead of the subject running,
// in subject order; a subject the run skips (start gives nil) takes no
// place among them.
type lookahead struct {
	n     int
	start func(i int) *prestart
	pre   []*prestart // by subject; nil once taken or dropped
	next  int         // the first subject not yet started ahead or passed
}

func newLookahead(n, subjects int, start func(i int) *prestart) *lookahead {
	return &lookahead{n: n, start: start, pre: make([]*prestart, subjects), next: 1} // the first runs at once
}

// take is subject i's process started ahead (nil: none), once the
// subjects after it are started up to n ahead. Subjects are taken in
// order.
func (q *lookahead) take(i int) *prestart {
	q.next = max(q.next, i+1)
	live := 0
	for _, p := range q.pre[i+1 : q.next] {
		if p != nil {
			live++
		}
	}
	for ; live < q.n && q.next < len(q.pre); q.next++ {
		if q.pre[q.next] = q.start(q.next); q.pre[q.next] != nil {
			live++
		}
	}
	p := q.pre[i]
	q.pre[i] = nil
	return p
}

// drop closes every process started ahead and not taken.
func (q *lookahead) drop() {
	for i, p := range q.pre {
		p.drop()
		q.pre[i] = nil
	}
}

// probed is what mutants learns of a plugin before running it: its
// description and the layouts its subjects run on, or why there are none.
type probed struct {
	desc    *plugin.Description
	layouts []*layout.Layout
	lerr    error
}

// probeLayouts describes the plugin and finds the layouts its controls
// and mutants run on: those it declares at cfg's head dim, or, when
// anyDim and it declares none there, those at the first fixed head dim of
// the built-in layouts (dsv4-main's 512) where it declares some, which
// becomes cfg's.
func probeLayouts(ctx context.Context, name string, tr trust, cfg *mutants.Config, anyDim bool) (probed, error) {
	dims := []int{cfg.HeadDim}
	if anyDim {
		dims = append(dims, fixedHeadDims()...)
	}
	var first probed
	for i, d := range dims {
		s, err := openTrusted(ctx, name, "", d, cfg.PageSize, plugin.DefaultCallTimeout, tr, nil)
		if err != nil {
			return probed{}, err
		}
		p := probed{desc: s.desc}
		p.layouts, p.lerr = s.layouts("all", "", d, cfg.PageSize)
		s.close()
		if i == 0 {
			first = p
		}
		if len(p.desc.Layouts) > 0 {
			cfg.HeadDim = d
			return p, nil
		}
	}
	return first, nil // no layouts anywhere: a kind without them (transfers), or the error to report
}

// fixedHeadDims are the built-in layouts' fixed head dims, ascending.
func fixedHeadDims() []int {
	var out []int
	for _, n := range layout.Names() {
		if d := layout.FixedHeadDim(n); d != 0 && !slices.Contains(out, d) {
			out = append(out, d)
		}
	}
	slices.Sort(out)
	return out
}

// runSubject runs one subject on a fresh process, pre (started ahead) when
// not nil; ok is false for one the run skips (a read or transfer under
// --graph).
func runSubject(ctx context.Context, name string, s mutants.Subject, cfg mutants.Config, layouts []*layout.Layout, lerr error, tr trust,
	tune func(*plugin.Options), pre *prestart) (mutants.Result, bool, error) {
	k, err := kernels.Lookup(s.Kernel)
	if err != nil {
		return mutants.Result{}, false, fmt.Errorf("%s %s: %w", name, s.Variant, err)
	}
	if cfg.Graph && !k.Graphs {
		pre.drop()
		return mutants.Result{}, false, nil // graphs replay stores; reads and transfers run eagerly
	}
	if k.Layouts && lerr != nil {
		pre.drop()
		return mutants.Result{}, false, lerr
	}
	t0 := time.Now()
	sess, err := pre.take()
	if sess == nil && err == nil {
		sess, err = openTrusted(ctx, name, s.Variant, cfg.HeadDim, cfg.PageSize, plugin.DefaultCallTimeout, tr, tune)
	}
	waited := time.Since(t0)
	sessionTook(ctx, waited, pre)
	if err != nil {
		return mutants.Result{}, false, fmt.Errorf("%s %s: %w", name, s.Variant, err)
	}
	defer sess.close()
	var also []*layout.Layout
	if k.Layouts {
		if layouts, also, err = subjectLayouts(sess, s, cfg, layouts); err != nil {
			return mutants.Result{}, false, fmt.Errorf("%s %s: %w", name, s.Variant, err)
		}
	}
	res := mutants.Run(ctx, s, cfg, suiteFor(sess, k, s, cfg, layouts, also))
	// The subject's time counts from its turn: the wait for its process
	// (and the warm-up of one started ahead) is part of it.
	res.ToKill += waited
	return res, true, nil
}

// subjectLayouts are the layouts subject s is checked on: those its
// variant names instead of the run's, or the run's and, as also, those a
// control checks beside them (mutants.Subject), each at the run's head
// dim and page size (its fixed head dim for one that has one).
func subjectLayouts(sess *session, s mutants.Subject, cfg mutants.Config, run []*layout.Layout) (layouts, also []*layout.Layout, err error) {
	build := func(names []string) ([]*layout.Layout, error) {
		var out []*layout.Layout
		for _, n := range names {
			if slices.ContainsFunc(run, func(l *layout.Layout) bool { return l.Name == n }) && len(s.Layouts) == 0 {
				continue // a control checks it among the run's
			}
			ls, err := sess.layouts(n, "", cfg.HeadDim, cfg.PageSize)
			if err != nil {
				return nil, err
			}
			out = append(out, ls...)
		}
		return out, nil
	}
	if len(s.Layouts) > 0 {
		layouts, err = build(s.Layouts)
		return layouts, nil, err
	}
	also, err = build(s.Also)
	return run, also, err
}

// alsoCases is the most cases a row a control checks only for its
// mutants' sake (Subject.Also: the engine caches) gets: more than the
// first round a mutant dies in (20), where a row of an engine cache of
// several heads costs what twenty of the run's own do.
const alsoCases = 50

// firstFailed is the run's first failing row.
func firstFailed(run *report.Run) (report.Row, bool) {
	for _, r := range run.Rows {
		if r.Failure != nil {
			return r, true
		}
	}
	return report.Row{}, false
}

// subjectLine is a finished subject in one line, as it streams above the
// progress bar.
func subjectLine(r mutants.Result) string {
	name := textsafe.String(r.Shown())
	if r.Variant != "" {
		name += "/" + textsafe.String(r.Variant)
	}
	verdict := "passed (control)"
	switch {
	case r.Err != nil:
		verdict = "ERROR"
	case r.Mutant && r.Killed:
		verdict = fmt.Sprintf("killed by %s after %d cases", r.Property, r.Cases)
	case r.Mutant:
		verdict = fmt.Sprintf("SURVIVED %d cases", r.Cases)
	case r.Killed:
		verdict = fmt.Sprintf("control FAILED %s", r.Property)
	}
	return fmt.Sprintf("  %-36s %s  %v", name, verdict, r.ToKill.Round(time.Millisecond))
}

// subjectParams are the settings of a check of subject s on layouts with
// a budget of cases, a seed and a stress, stopping at the first failure.
func subjectParams(k *kind.Kind, s mutants.Subject, c mutants.Config, layouts []*layout.Layout, cases int, seed int64, stress int) kind.Params {
	setup := c.Setup
	if setup.Slots == 0 {
		setup.Slots = k.PoolSlots(c.Backend.Place(), c.PageSize)
	}
	setup.Graph = c.Graph && k.Graphs
	return kind.Params{Variant: s.Variant, Layouts: layouts, Padding: "all", Cases: cases, Seed: seed, Setup: setup,
		Value: c.ValueOf(s), StopAtFirst: true, Stress: stress}
}

// suiteFor is the subject's kernel's properties on its session, stopping
// at the first failure.
func suiteFor(sess *session, k *kind.Kind, s mutants.Subject, c mutants.Config, layouts, also []*layout.Layout) mutants.SuiteFunc {
	return func(ctx context.Context, cases int, seed int64, stress int) (*report.Run, error) {
		p := subjectParams(k, s, c, layouts, cases, seed, stress)
		run, err := k.Check(ctx, sess.kind(s.Plugin), p)
		if err != nil || run.Err != nil || len(also) == 0 {
			return run, err
		}
		if _, failed := firstFailed(run); failed {
			return run, nil
		}
		p.Layouts, p.Cases = also, min(cases, alsoCases)
		more, err := k.Check(ctx, sess.kind(s.Plugin), p)
		if more != nil {
			run.Rows, run.Err = append(run.Rows, more.Rows...), more.Err
		}
		return run, err
	}
}
