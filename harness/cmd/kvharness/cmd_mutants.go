package main

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/spf13/pflag"

	"github.com/kvharness/kvharness/harness/arena"
	"github.com/kvharness/kvharness/harness/internal/textsafe"
	"github.com/kvharness/kvharness/harness/kernels"
	"github.com/kvharness/kvharness/harness/kind"
	"github.com/kvharness/kvharness/harness/layout"
	"github.com/kvharness/kvharness/harness/mutants"
	"github.com/kvharness/kvharness/harness/plugin"
	"github.com/kvharness/kvharness/harness/protocol"
	"github.com/kvharness/kvharness/harness/report"
)

const mutantsExamples = `  kvharness mutants
  kvharness mutants --plugin fp8store --cases 5000
`

func runMutants(ctx context.Context, e *env, args []string) int {
	fs := flags("mutants", "[--plugin P]... [flags]", mutantsExamples, e)
	names := fs.StringSlice("plugin", plugin.UnderTestNames(), "plugins whose controls and variants to run")
	cfg := mutants.Config{Setup: kind.Setup{PageSize: layout.DefaultPageSize}}
	fs.IntVar(&cfg.Cases, "cases", 1000, "largest per-combination budget: controls run this many, mutants escalate 20, 200, then this")
	fs.Int64Var(&cfg.Seed, "seed", 1, "seed")
	fs.IntVar(&cfg.Slots, "slots", 0, "slots in the pool (0: each kernel's default: "+slotDefaults+")")
	fs.IntVar(&cfg.MaxCapacity, "max-capacity", 512, "largest batch capacity drawn")
	noTimes := fs.Bool("no-times", false, "leave wall times out of the table (for golden files)")
	backend := fs.String("backend", "auto", "cpu, cuda or auto (see check --help)")
	noMTLS := fs.Bool("no-mtls", false, "no mutual TLS on the plugin channel (see check --help)")
	device := fs.Int("device", 0, "CUDA device ordinal")
	fs.BoolVar(&cfg.Graph, "graph", false, "replay stores from captured CUDA graphs")
	fs.IntVar(&cfg.HeadDim, "head-dim", layout.DefaultHeadDim, "head dimension D (default: 128, or the fixed head dim of the layouts a plugin declares none at 128 for)")
	value := fs.String("value", "recipe", valueUsage+"; mutants only: controls are judged by their recipes")
	if code, ok := parse(fs, args); !ok {
		return code
	}
	if err := checkMutants(fs, cfg, *names, *backend, *device); err != nil {
		return e.errorf("%v", err)
	}
	var err error
	if cfg.Value, err = parseValue(*value); err != nil {
		return e.errorf("%v", err)
	}
	g := progressOn(e, "mutants", "subjects")
	run := subjectRun{backend: *backend, device: *device, tr: trust{noMTLS: *noMTLS}, anyDim: !fs.Changed("head-dim"),
		skipUnserved: !fs.Changed("plugin")}
	results, skipped, err := run.all(ctx, g, *names, cfg)
	g.done()
	if code, stop := resourceError(e, err, "--slots", cfg.Slots); stop {
		return code
	}
	if err != nil && !interrupted(ctx) {
		return e.errorf("%v", err)
	}
	mutants.WriteTable(e.stdout, results, !*noTimes)
	mutants.WriteSummary(e.stdout, results, !*noTimes)
	if cfg.Value == layout.Exact {
		fmt.Fprintln(e.stdout, "(mutants' fp8 values judged bit-exact; controls' by their declared recipes)")
	}
	for _, s := range skipped {
		fmt.Fprintf(e.stdout, "(%s not run: --backend cuda: the plugin has no CUDA kernel (it serves %v))\n", s.name, s.served)
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

// checkMutants refuses flags no mutants run means.
func checkMutants(fs *pflag.FlagSet, cfg mutants.Config, names []string, backend string, device int) error {
	if fs.NArg() > 0 {
		return noArgs(fs)
	}
	if err := checkCaseFlags(cfg.Cases, cfg.Slots, cfg.MaxCapacity, cfg.HeadDim, "each kernel's"); err != nil {
		return err
	}
	switch {
	case !oneOf(backend, arena.Backends...):
		return fmt.Errorf("--backend %q: want auto, cpu or cuda", backend)
	case device < 0:
		return fmt.Errorf("--device %d: want a CUDA device ordinal, 0 or more", device)
	case len(names) == 0:
		return fmt.Errorf("--plugin: give at least one plugin (%s)", quoteList(plugin.UnderTestNames()))
	}
	return nil
}

// subjectRun is how one mutants run reaches its plugins. skipUnserved (no
// --plugin given) passes over a bundled plugin that does not serve a
// --backend cuda the user insisted on (a CPU-only example), where one the
// user named is an error.
type subjectRun struct {
	backend      string
	device       int
	tr           trust
	anyDim       bool // no --head-dim given: a plugin may run at its layouts' fixed head dim
	skipUnserved bool
}

// unserved is a plugin passed over for the backend, and what it serves.
type unserved struct {
	name   string
	served []protocol.Backend
}

// all runs every plugin's controls and variants, reporting each as it
// finishes; on an interrupt it returns the results so far.
func (r subjectRun) all(ctx context.Context, g *progress, names []string, cfg mutants.Config) ([]mutants.Result, []unserved, error) {
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

// of runs one plugin's controls and variants, a fresh process each, so
// one variant's state cannot leak into the next.
func (r subjectRun) of(ctx context.Context, g *progress, name string, cfg mutants.Config) ([]mutants.Result, *unserved, error) {
	probe, err := probeLayouts(ctx, name, r.tr, &cfg, r.anyDim)
	if err != nil {
		return nil, nil, err
	}
	subjects := mutants.Subjects(name, probe.desc)
	layouts, lerr, served := probe.layouts, probe.lerr, probe.desc.Backends
	if r.skipUnserved && r.backend == "cuda" && !slices.Contains(served, protocol.BackendCUDA) {
		return nil, &unserved{name: name, served: served}, nil
	}
	b, release, err := arena.Choose(r.backend, r.device, served)
	if err != nil {
		return nil, nil, err
	}
	defer release()
	if cfg.Graph && !b.Place().OnDevice() {
		return nil, nil, fmt.Errorf("--graph needs the cuda backend; %s runs on the cpu backend here", name)
	}
	cfg.Backend = b
	g.grow(len(subjects))
	var out []mutants.Result
	for _, s := range subjects {
		res, ok, err := runSubject(ctx, name, s, cfg, layouts, lerr, r.tr, onGPU(r.backend, r.device))
		if err != nil || ctx.Err() != nil {
			return out, nil, err
		}
		g.step(1)
		if ok {
			out = append(out, res)
			g.line("%s", subjectLine(res))
		}
	}
	return out, nil, nil
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

// runSubject runs one subject on a fresh process; ok is false for one the
// run skips (a read or transfer under --graph).
func runSubject(ctx context.Context, name string, s mutants.Subject, cfg mutants.Config, layouts []*layout.Layout, lerr error, tr trust, tune func(*plugin.Options)) (mutants.Result, bool, error) {
	k, err := kernels.Lookup(s.Kernel)
	if err != nil {
		return mutants.Result{}, false, fmt.Errorf("%s %s: %w", name, s.Variant, err)
	}
	if cfg.Graph && !k.Graphs {
		return mutants.Result{}, false, nil // graphs replay stores; reads and transfers run eagerly
	}
	if k.Layouts && lerr != nil {
		return mutants.Result{}, false, lerr
	}
	sess, err := openTrusted(ctx, name, s.Variant, cfg.HeadDim, cfg.PageSize, plugin.DefaultCallTimeout, tr, tune)
	if err != nil {
		return mutants.Result{}, false, fmt.Errorf("%s %s: %w", name, s.Variant, err)
	}
	defer sess.close()
	return mutants.Run(ctx, s, cfg, suiteFor(sess, k, s, cfg, layouts)), true, nil
}

// subjectLine is a finished subject in one line, as it streams above the
// progress bar.
func subjectLine(r mutants.Result) string {
	name := textsafe.String(r.Plugin)
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

// suiteFor is the subject's kernel's properties on its session, stopping
// at the first failure.
func suiteFor(sess *session, k *kind.Kind, s mutants.Subject, c mutants.Config, layouts []*layout.Layout) mutants.SuiteFunc {
	setup := c.Setup
	if setup.Slots == 0 {
		setup.Slots, setup.DefaultSlots = defaultSlots(k.Name, c.Backend.Place(), c.PageSize), true
	}
	setup.Graph = c.Graph && k.Graphs
	return func(ctx context.Context, cases int, seed int64, stress int) (*report.Run, error) {
		p := kind.Params{Variant: s.Variant, Layouts: layouts, Padding: "all", Cases: cases, Seed: seed, Setup: setup,
			Value: c.ValueOf(s), StopAtFirst: true, Stress: stress}
		return k.Check(ctx, sess.kind(s.Plugin), p)
	}
}
