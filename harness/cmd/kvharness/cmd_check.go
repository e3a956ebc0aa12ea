package main

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/kvharness/kvharness/harness/check"
	"github.com/kvharness/kvharness/harness/layout"
	"github.com/kvharness/kvharness/harness/plugin"
	"github.com/kvharness/kvharness/harness/property"
	"github.com/kvharness/kvharness/harness/report"
	"github.com/kvharness/kvharness/harness/workload"
)

func init() {
	register("check", "run the store properties against a plugin", runCheck)
}

const checkExamples = `  kvharness check --plugin fusedstore
  kvharness check --plugin fp8store --layout fp8-paged --cases 10000
  kvharness check --plugin bf16scatter --padding sink
  kvharness check --plugin ./my-plugin --variant my-mutant --json
`

// checkFlags are the flags check, mutants and repro share (--jobs is
// check's alone, and only for store kernels).
type checkFlags struct {
	plugin, variant, kernel, layout, layoutFile, padding, results, backend string
	cases, slots, headDim, pageSize, maxCapacity, device, maxFaults, jobs  int
	seed                                                                   int64
	timeout                                                                time.Duration
	json, graph                                                            bool
	trust                                                                  trust
}

func (f *checkFlags) register(fs interface {
	StringVar(*string, string, string, string)
	IntVar(*int, string, int, string)
	Int64Var(*int64, string, int64, string)
	DurationVar(*time.Duration, string, time.Duration, string)
	BoolVar(*bool, string, bool, string)
}) {
	fs.StringVar(&f.plugin, "plugin", "", "bundled plugin name ("+quoteList(plugin.Bundled)+") or path to a plugin executable")
	fs.StringVar(&f.variant, "variant", "", "plugin variant (a named mutant) to run")
	fs.StringVar(&f.kernel, "kernel", "", "kernel to check: store, read or transfer (default: the plugin's first)")
	fs.StringVar(&f.layout, "layout", "all", "layout name, or all: every built-in layout the plugin declares")
	fs.StringVar(&f.layoutFile, "layout-file", "", "JSON layout description to use instead of --layout")
	fs.StringVar(&f.padding, "padding", "all", "padding convention: none, count, sink, minus1 or all")
	fs.IntVar(&f.cases, "cases", 500, "passing cases wanted per layout × padding")
	fs.Int64Var(&f.seed, "seed", 1, "seed of the case generator (the same seed and flags give the same cases and report)")
	fs.IntVar(&f.slots, "slots", 4096, "slots in the pool")
	fs.IntVar(&f.headDim, "head-dim", layout.DefaultHeadDim, "head dimension D (elements per row)")
	fs.IntVar(&f.pageSize, "page-size", layout.DefaultPageSize, "page size P (tokens per page)")
	fs.IntVar(&f.maxCapacity, "max-capacity", 512, "largest batch capacity C drawn")
	fs.StringVar(&f.results, "results", "kvharness-results", "folder for repro files of failures")
	fs.DurationVar(&f.timeout, "timeout", plugin.DefaultCallTimeout, "deadline of one plugin call; past it the plugin is killed as hung")
	fs.BoolVar(&f.json, "json", false, "print JSON instead of text")
	fs.StringVar(&f.backend, "backend", "auto", "where the pool lives: cpu (host shared memory), cuda (GPU memory), or auto (cuda when a GPU and a CUDA kernel are there)")
	fs.IntVar(&f.device, "device", 0, "CUDA device ordinal")
	fs.BoolVar(&f.graph, "graph", false, "capture each store in a CUDA graph at capacity C and replay it, as serving engines do")
	fs.IntVar(&f.jobs, "jobs", 0, "layout × padding combinations checked at once, each on a plugin process of its own (0: 4 on the cuda backend, where a case mostly waits, 1 on cpu)")
	fs.IntVar(&f.maxFaults, "max-faults", 3, "stop once the same plugin fault (kind and call) happened this often; before that, restart the plugin and go on")
	f.trust.register(fs)
}

func (f *checkFlags) validate() error {
	switch {
	case f.plugin == "":
		return fmt.Errorf("--plugin is required (one of %s, or a path)", quoteList(plugin.Bundled))
	case f.cases < 1:
		return fmt.Errorf("--cases %d: want at least 1", f.cases)
	case f.slots < 2:
		return fmt.Errorf("--slots %d: want at least 2 (slot 0 may be reserved)", f.slots)
	case f.maxCapacity < 1 || f.maxCapacity > workload.MaxCapacity:
		return fmt.Errorf("--max-capacity %d: want 1..%d", f.maxCapacity, workload.MaxCapacity)
	case f.headDim < 16 || f.headDim%16 != 0 || f.headDim > layout.MaxHeadDim:
		return fmt.Errorf("--head-dim %d: want a multiple of 16 in [16, %d]", f.headDim, layout.MaxHeadDim)
	case f.pageSize < 1 || f.pageSize > 1<<16:
		return fmt.Errorf("--page-size %d: want 1..65536 tokens", f.pageSize)
	case f.jobs < 0 || f.jobs > 64:
		return fmt.Errorf("--jobs %d: want 0 (automatic) to 64", f.jobs)
	case f.maxFaults < 1:
		return fmt.Errorf("--max-faults %d: want at least 1", f.maxFaults)
	case f.timeout <= 0:
		return fmt.Errorf("--timeout %v: want a positive duration", f.timeout)
	case f.layoutFile != "" && f.layout != "all":
		return fmt.Errorf("--layout and --layout-file conflict: give one")
	case !oneOf(f.backend, check.Backends...):
		return fmt.Errorf("--backend %q: want auto, cpu or cuda", f.backend)
	case f.padding != "all" && !oneOf(f.padding, "none", "count", "sink", "minus1"):
		return fmt.Errorf("--padding %q: want none, count, sink, minus1 or all", f.padding)
	}
	return nil
}

// jobsOn resolves --jobs 0 for a backend: on the GPU four jobs overlap a
// case's waits (measured: 718 cases/s with one, 1,377 with four, no more
// with eight, on an H200); on the CPU a case keeps a core busy.
func (f *checkFlags) jobsOn(where string) int {
	switch {
	case f.jobs > 0:
		return f.jobs
	case strings.HasPrefix(where, "cuda"):
		return 4
	default:
		return 1
	}
}

func (f *checkFlags) paddings() []workload.Padding {
	if f.padding == "all" {
		return workload.Paddings
	}
	p, _ := workload.ParsePadding(f.padding)
	return []workload.Padding{p}
}

func runCheck(ctx context.Context, e *env, args []string) int {
	var f checkFlags
	fs := flags("check", "--plugin NAME|PATH [flags]", checkExamples, e)
	f.register(fs)
	if code, ok := parse(fs, args); !ok {
		return code
	}
	if err := f.validate(); err != nil {
		return e.errorf("%v", err)
	}
	s, err := openTrusted(ctx, f.plugin, f.variant, f.headDim, f.pageSize, f.timeout, f.trust)
	if err != nil {
		return e.errorf("%v", err)
	}
	defer s.close()
	kernel, err := s.kernel(f.kernel)
	if err != nil {
		return e.errorf("%v", err)
	}
	if kernel != "store" {
		return kernelChecks[kernel](ctx, e, &f, s)
	}
	layouts, err := s.layouts(f.layout, f.layoutFile, f.headDim, f.pageSize)
	if err != nil {
		return e.errorf("%v", err)
	}
	backend, where, release, err := check.ChooseBackend(f.backend, f.device, s.desc.Backends)
	if err != nil {
		return e.errorf("%v", err)
	}
	defer release()
	if f.graph && where == "cpu" {
		return e.errorf("--graph needs the cuda backend (CUDA graphs); this run is on the cpu backend")
	}
	suite := &property.Suite{Plugin: s.plugin, Dir: s.dir, Variant: f.variant, Layouts: layouts,
		Paddings: f.paddings(), Cases: f.cases, Seed: f.seed, Slots: f.slots, MaxCapacity: f.maxCapacity,
		BackgroundSeed: f.seed, Backend: backend, Graph: f.graph, MaxFaults: f.maxFaults,
		Jobs: f.jobsOn(where), Spawn: s.spawn}
	verdicts, runErr := suite.Run(ctx)
	failures, err := saveFailures(&f, s.desc.Name, verdicts)
	if err != nil {
		return e.errorf("%v", err)
	}
	h := report.Header{Plugin: s.desc.Name, Version: s.desc.Version, Variant: f.variant, Cases: f.cases,
		Slots: f.slots, MaxCapacity: f.maxCapacity, Seed: f.seed, Backend: where, Graph: f.graph}
	if f.json {
		writeJSON(e, h, verdicts, failures, runErr)
	} else {
		writeText(e, h, verdicts, failures)
	}
	return verdictCode(e, verdicts, runErr)
}

// saveFailures writes a repro file per failure before anything is reported.
func saveFailures(f *checkFlags, name string, vs []property.Verdict) ([]report.Failure, error) {
	var out []report.Failure
	for _, v := range vs {
		if v.Outcome.Failure == nil {
			continue
		}
		r := reproOf(f.plugin, f.variant, f.slots, f.seed, v)
		path, err := r.Save(f.results)
		if err != nil {
			return nil, err
		}
		out = append(out, report.Failure{Plugin: name, Variant: f.variant, Layout: v.Layout, Verdict: v, ReproPath: path})
	}
	return out, nil
}

func reproOf(pluginArg, variant string, slots int, bg int64, v property.Verdict) *report.Repro {
	fl := v.Outcome.Failure
	vs := fl.Minimal.Violations
	if len(vs) > report.MaxViolations {
		vs = vs[:report.MaxViolations]
	}
	return &report.Repro{Version: report.ReproVersion, Kernel: fl.Minimal.Case.Kernel(), Plugin: pluginArg, Variant: variant,
		Layout: v.Layout.JSON(), Slots: slots, BackgroundSeed: bg, Case: fl.Minimal.Case,
		Found: &report.Found{Property: fl.Property, Flaky: fl.Flaky, Seed: v.Seed, CaseIndex: v.Outcome.Cases,
			Shrinks: fl.Shrinks, Violations: vs}}
}

func writeText(e *env, h report.Header, vs []property.Verdict, failures []report.Failure) {
	report.WriteTable(e.stdout, h, vs)
	for i, f := range failures {
		if i == 0 {
			fmt.Fprintln(e.stdout)
			report.WriteFailure(e.stdout, f)
			continue
		}
		if i == 1 {
			fmt.Fprintln(e.stdout, "\nother failures:")
		}
		fmt.Fprintf(e.stdout, "  %s/%s %s: kvharness repro %s\n", f.Layout.Name, f.Verdict.Label,
			f.Verdict.Outcome.Failure.Property, f.ReproPath)
	}
}

func writeJSON(e *env, h report.Header, vs []property.Verdict, failures []report.Failure, runErr error) {
	out := report.JSON(h, vs, failures, runErr)
	enc := json.NewEncoder(e.stdout)
	enc.SetIndent("", "  ")
	enc.Encode(out)
}

// verdictCode prints plugin faults and picks the exit status: a
// violation is 1 (the kernel wrote wrong bytes); otherwise any plugin
// fault, survived or not, is 2 (the plugin itself failed).
func verdictCode(e *env, vs []property.Verdict, runErr error) int {
	faulted := runErr != nil
	for _, v := range vs {
		for _, f := range v.Outcome.Faults {
			faulted = true
			fmt.Fprintf(e.stderr, "\nkvharness: %s/%s: %v\n  case: %v\n  (plugin restarted, run continued)\n", v.Layout.Name, v.Label, f.Fault, f.Case)
		}
	}
	if runErr != nil {
		fmt.Fprintf(e.stderr, "\nkvharness: %v\n", runErr)
		for _, v := range vs {
			if v.Outcome.FaultCase != nil {
				fmt.Fprintf(e.stderr, "  while running %s/%s case %v\n", v.Layout.Name, v.Label, v.Outcome.FaultCase)
			}
		}
	}
	for _, v := range vs {
		if v.Outcome.Failure != nil {
			return exitViolation
		}
	}
	if faulted {
		return exitError
	}
	return exitPass
}
