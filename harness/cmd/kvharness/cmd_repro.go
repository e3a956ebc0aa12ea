package main

import (
	"context"
	"fmt"
	"time"

	"github.com/kvharness/kvharness/harness/internal/textsafe"
	"github.com/kvharness/kvharness/harness/kernels"
	"github.com/kvharness/kvharness/harness/layout"
	"github.com/kvharness/kvharness/harness/plugin"
	"github.com/kvharness/kvharness/harness/report"
)

const reproExamples = `  kvharness repro kvharness-results/bf16scatter-bf16-sink-padding-2139fc0f.json
  kvharness repro FILE --plugin fusedstore            # does the fix pass the case?
  kvharness repro FILE --plugin fusedstore --variant ignore-count
  kvharness repro FILE --count 20                     # how often does a flaky case fail?
  kvharness repro FILE --backend cpu                  # a GPU finding's bytes, on the host
`

func runRepro(ctx context.Context, e *env, args []string) int {
	fs := flags("repro", "FILE [--plugin P] [--variant V] [--value recipe|exact] [--backend cpu|cuda] [--graph]", reproExamples, e)
	pluginArg := fs.String("plugin", "", "plugin to replay against (default: the file's, when it names a bundled plugin)")
	variant := fs.String("variant", "", "variant to replay against (default: the one in the file)")
	timeout := fs.Duration("timeout", plugin.DefaultCallTimeout, "deadline of one plugin call")
	count := fs.Int("count", 1, "check the case this many times and say how many failed (a flaky finding fails some of them)")
	value := fs.String("value", "", valueUsage+" (default: as the file records)")
	backend := fs.String("backend", "", "replay on this backend instead of the file's: cpu replays a GPU finding's bytes on the host (where graph replay and device ordering cannot show), cuda or auto")
	device := fs.Int("device", 0, "CUDA device ordinal (default: the file's)")
	graph := fs.Bool("graph", false, "replay stores from captured CUDA graphs, or not with --graph=false (default: as the file records)")
	fromFile := fs.Bool("plugin-from-file", false, "run the plugin the file names even when it is a path or command, not a bundled plugin (a repro file may come from anyone: only trust your own)")
	var tr trust
	tr.register(fs)
	if code, ok := parse(fs, args); !ok {
		return code
	}
	if fs.NArg() != 1 {
		return e.errorf("repro: want exactly one repro file, got %d arguments (kvharness repro FILE)", fs.NArg())
	}
	if *count < 1 || *count > 100000 {
		return e.errorf("--count %d: want 1..100000 replays", *count)
	}
	mode, err := parseValue(*value)
	if fs.Changed("value") && err != nil {
		return e.errorf("%v", err)
	}
	path := fs.Arg(0)
	r, l, err := report.LoadRepro(path, kernels.Decode)
	if err != nil {
		return e.errorf("%v", err)
	}
	on, err := replayWhere(r, fs.Changed, *backend, *device, *graph)
	if err != nil {
		return e.errorf("%v", err)
	}
	if err := on.present(path); err != nil {
		return e.errorf("%v", err)
	}
	if *pluginArg == "" {
		if !plugin.IsBundled(r.Plugin) && !*fromFile {
			return e.errorf("%s names plugin %q, a path or command rather than a bundled plugin; a repro file may come from anyone, so kvharness runs no command from it: give --plugin %s to run it (or --plugin-from-file)",
				path, textsafe.String(r.Plugin), shellQuote(textsafe.String(r.Plugin)))
		}
		*pluginArg = r.Plugin
	}
	if fs.Changed("variant") {
		r.Variant = *variant
	}
	if fs.Changed("value") {
		r.Value = mode.String()
	}
	r.Count = *count
	return replay(ctx, e, r, l, on, *pluginArg, *timeout, tr, path)
}

func replay(ctx context.Context, e *env, r *report.Repro, l *layout.Layout, on replayOn, pluginArg string, timeout time.Duration, tr trust, path string) int {
	k, err := kernels.Lookup(r.Kernel)
	if err != nil {
		return e.errorf("%s: %v", path, err)
	}
	s, err := openTrusted(ctx, pluginArg, r.Variant, l.HeadDim, l.PageSize, timeout, tr, onGPU(on.want))
	if err != nil {
		return e.errorf("%v", err)
	}
	defer s.close()
	b, release, err := on.choose(s.desc.Backends, path)
	if err != nil {
		return e.errorf("%v", err)
	}
	defer release()
	if on.graph && !k.Graphs {
		return e.errorf("--graph applies to stores; %s kernels run eagerly", k.Name)
	}
	r.Graph = on.graph
	fmt.Fprintln(e.stdout, on.firstLine(b))
	s.identify(pluginArg)
	if note := identityNote(r.Identity, s.identity); note != "" {
		fmt.Fprintln(e.stdout, note)
	}
	f, err := k.Replay(ctx, s.kind(pluginArg), r, l, b)
	if code, stop := resourceError(e, err, path+": slots", r.Slots); stop {
		return code
	}
	if err != nil {
		if interrupted(ctx) {
			return e.errorf("interrupted: %s was not replayed to the end", path)
		}
		return e.errorf("%v", err)
	}
	if f == nil {
		fmt.Fprintf(e.stdout, "PASS %s%s · %s · %v: no invariant violated%s\n", s.desc.Name, variantSuffix(r.Variant), l.Name, r.Case, runsNote(r.Count))
		if r.Found != nil && r.Found.NeedsHistory {
			fmt.Fprintf(e.stdout, "  as expected in a fresh process: this failure needs the plugin's history (it failed only in a process\n"+
				"  that had run other cases first); re-run the check that found it: what ran before case %d of seed %d set it up\n",
				r.Found.CaseIndex, r.Found.Seed)
		}
		return exitPass
	}
	f.ReproPath, f.ReplayPlugin = path, replayPlugin(pluginArg)
	report.WriteFailure(e.stdout, f)
	return exitViolation
}

// runsNote says how many replays passed, when there were several.
func runsNote(count int) string {
	if count <= 1 {
		return ""
	}
	return fmt.Sprintf(" in %d of %d runs", count, count)
}

// shellQuote quotes s for a shell when it needs quoting.
func shellQuote(s string) string { return report.ShellQuote(s) }

func variantSuffix(v string) string {
	if v == "" {
		return ""
	}
	return " --variant " + v
}
