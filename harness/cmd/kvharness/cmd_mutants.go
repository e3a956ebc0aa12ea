package main

import (
	"context"
	"fmt"

	"github.com/kvharness/kvharness/harness/arena"
	"github.com/kvharness/kvharness/harness/kernels"
	"github.com/kvharness/kvharness/harness/kind"
	"github.com/kvharness/kvharness/harness/layout"
	"github.com/kvharness/kvharness/harness/mutants"
	"github.com/kvharness/kvharness/harness/plugin"
	"github.com/kvharness/kvharness/harness/report"
)

func init() {
	register("mutants", "run the suite on every plugin and mutant: mutants must die, controls pass", runMutants)
}

const mutantsExamples = `  kvharness mutants
  kvharness mutants --plugin fp8store --cases 5000
`

func runMutants(ctx context.Context, e *env, args []string) int {
	fs := flags("mutants", "[--plugin P]... [flags]", mutantsExamples, e)
	names := fs.StringSlice("plugin", plugin.UnderTestNames(), "plugins whose controls and variants to run")
	cfg := mutants.Config{HeadDim: layout.DefaultHeadDim, PageSize: layout.DefaultPageSize}
	fs.IntVar(&cfg.Cases, "cases", 1000, "largest per-combination budget: controls run this many, mutants escalate 20, 200, then this")
	fs.Int64Var(&cfg.Seed, "seed", 1, "seed")
	fs.IntVar(&cfg.Slots, "slots", 4096, "slots in the pool")
	fs.IntVar(&cfg.MaxCapacity, "max-capacity", 512, "largest batch capacity drawn")
	noTimes := fs.Bool("no-times", false, "leave wall times out of the table (for golden files)")
	backend := fs.String("backend", "auto", "cpu, cuda or auto (see check --help)")
	noMTLS := fs.Bool("no-mtls", false, "no mutual TLS on the plugin channel (see check --help)")
	device := fs.Int("device", 0, "CUDA device ordinal")
	fs.BoolVar(&cfg.Graph, "graph", false, "replay stores from captured CUDA graphs")
	if code, ok := parse(fs, args); !ok {
		return code
	}
	if cfg.Cases < 1 || cfg.Slots < 2 || cfg.MaxCapacity < 1 {
		return e.errorf("--cases, --slots and --max-capacity must be positive (and slots ≥ 2)")
	}
	var results []mutants.Result
	for _, name := range *names {
		rs, err := mutantsOf(ctx, name, *backend, *device, trust{noMTLS: *noMTLS}, cfg)
		if err != nil {
			return e.errorf("%v", err)
		}
		results = append(results, rs...)
	}
	mutants.WriteTable(e.stdout, results, !*noTimes)
	mutants.WriteSummary(e.stdout, results, !*noTimes)
	for _, r := range results {
		if !r.OK() {
			return exitViolation
		}
	}
	return exitPass
}

// mutantsOf runs one plugin's controls and variants, a fresh process each,
// so one variant's state cannot leak into the next.
func mutantsOf(ctx context.Context, name, backend string, device int, tr trust, cfg mutants.Config) ([]mutants.Result, error) {
	probe, err := openTrusted(ctx, name, "", cfg.HeadDim, cfg.PageSize, plugin.DefaultCallTimeout, tr)
	if err != nil {
		return nil, err
	}
	subjects := mutants.Subjects(name, probe.desc)
	layouts, lerr := probe.layouts("all", "", cfg.HeadDim, cfg.PageSize)
	served := probe.desc.Backends
	probe.close()
	b, release, err := arena.Choose(backend, device, served)
	if err != nil {
		return nil, err
	}
	defer release()
	if cfg.Graph && !b.Place().OnDevice() {
		return nil, fmt.Errorf("--graph needs the cuda backend; %s runs on the cpu backend here", name)
	}
	cfg.Backend = b
	var out []mutants.Result
	for _, s := range subjects {
		k, err := kernels.Lookup(s.Kernel)
		if err != nil {
			return nil, fmt.Errorf("%s %s: %w", name, s.Variant, err)
		}
		if cfg.Graph && !k.Graphs {
			continue // graphs replay stores; reads and transfers run eagerly
		}
		if k.Layouts && lerr != nil {
			return nil, lerr
		}
		sess, err := openTrusted(ctx, name, s.Variant, cfg.HeadDim, cfg.PageSize, plugin.DefaultCallTimeout, tr)
		if err != nil {
			return nil, fmt.Errorf("%s %s: %w", name, s.Variant, err)
		}
		out = append(out, mutants.Run(ctx, s, cfg, suiteFor(sess, k, s, cfg, layouts)))
		sess.close()
	}
	return out, nil
}

// suiteFor is the subject's kernel's properties on its session, stopping
// at the first failure.
func suiteFor(sess *session, k *kind.Kind, s mutants.Subject, c mutants.Config, layouts []*layout.Layout) mutants.SuiteFunc {
	return func(ctx context.Context, cases int, seed int64, stress int) (*report.Run, error) {
		p := kind.Params{Variant: s.Variant, Layouts: layouts, Padding: "all", Cases: cases, Seed: seed, Slots: c.Slots,
			MaxCapacity: c.MaxCapacity, HeadDim: c.HeadDim, PageSize: c.PageSize, Backend: c.Backend, Graph: c.Graph && k.Graphs,
			StopAtFirst: true, Stress: stress}
		return k.Check(ctx, sess.kind(s.Plugin), p)
	}
}
