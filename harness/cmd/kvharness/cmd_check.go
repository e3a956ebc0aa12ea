package main

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"time"

	"github.com/kvharness/kvharness/harness/arena"
	"github.com/kvharness/kvharness/harness/arena/shm"
	"github.com/kvharness/kvharness/harness/kernels"
	"github.com/kvharness/kvharness/harness/kind"
	"github.com/kvharness/kvharness/harness/layout"
	"github.com/kvharness/kvharness/harness/plugin"
	"github.com/kvharness/kvharness/harness/property"
	"github.com/kvharness/kvharness/harness/report"
	"github.com/kvharness/kvharness/harness/shard"
	"github.com/kvharness/kvharness/harness/workload"
)

const checkExamples = `  kvharness check --plugin fusedstore
  kvharness check --plugin fp8store --layout fp8-paged --cases 10000
  kvharness check --plugin bf16scatter --padding sink
  kvharness check --plugin ./my-plugin --variant my-mutant --json
  kvharness check --plugin fusedstore --shard 2/3 --json   # part 2 of 3 of the rows, on one of three machines
  kvharness check --plugin ./my-plugin.json --junit results.xml   # also a JUnit report for CI
  kvharness check --writer gostore --reader gostore --reader-variant pow2-scale-read --layout fp8-paged   # does the reader see what the writer stored?
`

// checkFlags are the flags check, mutants and repro share (--jobs is
// check's alone, and only for store kernels).
type checkFlags struct {
	plugin, variant, kernel, layout, layoutFile, padding, results, backend string
	sanitize                                                               string
	value                                                                  string
	shard                                                                  string // check's alone
	addressing                                                             string // stores: slots or page-table
	trace                                                                  string // check's alone: a recorded engine trace (sequence kernels)
	cases, slots, headDim, pageSize, maxCapacity, device, maxFaults, jobs  int
	heads                                                                  int
	stress                                                                 int
	seed                                                                   int64
	timeout                                                                time.Duration
	json, graph                                                            bool
	trust                                                                  trust
	want                                                                   arena.Want // --backend and --device, read once by validate
	// draw is the geometry axes each row draws (check's default): those
	// whose flag (--head-dim, --page-size) was not given.
	draw workload.Axes
}

func (f *checkFlags) register(fs interface {
	StringVar(*string, string, string, string)
	IntVar(*int, string, int, string)
	Int64Var(*int64, string, int64, string)
	DurationVar(*time.Duration, string, time.Duration, string)
	BoolVar(*bool, string, bool, string)
}) {
	fs.StringVar(&f.plugin, "plugin", "", "bundled plugin name ("+quoteList(plugin.BundledNames())+") or path to a plugin executable")
	fs.StringVar(&f.variant, "variant", "", "plugin variant (a named mutant) to run")
	fs.StringVar(&f.kernel, "kernel", "", "kernel to check: "+kernels.Names()+" (default: the plugin's first)")
	fs.StringVar(&f.layout, "layout", "all", "layout name, or a group: all (the built-in layouts of one record per slot the plugin declares, or its engine caches when it declares none of those) or engines (every engine cache it declares: vllm-flash, flashinfer-nhd, nvfp4-kv, ...)")
	fs.StringVar(&f.layoutFile, "layout-file", "", "JSON layout description to use instead of --layout")
	fs.StringVar(&f.padding, "padding", "all", "padding convention: none, count, sink, minus1 or all")
	fs.StringVar(&f.addressing, "addressing", "", "how stores are addressed: slots or page-table (FlashInfer's kv_indptr, kv_indices, kv_last_page_len, batch_indices and positions); default: the plugin's, slots where it takes both")
	fs.IntVar(&f.cases, "cases", 500, "passing cases wanted per layout × padding")
	fs.Int64Var(&f.seed, "seed", 1, "seed of the case generator (the same seed and flags give the same cases and report)")
	fs.IntVar(&f.slots, "slots", 0, "slots in the pool (0: the kernel's default: "+kernels.SlotsHelp()+")")
	fs.IntVar(&f.headDim, "head-dim", layout.DefaultHeadDim, "head dimension D (elements per row); without it each row draws one the plugin accepts, awkward ones (not multiples of 16) favoured")
	fs.IntVar(&f.pageSize, "page-size", layout.DefaultPageSize, "page size P (tokens per page); without it each row draws one the plugin accepts, page size 1 favoured")
	fs.IntVar(&f.heads, "heads", 0, "KV heads per token H of the engines' K/V layouts; without it each row draws a count the plugin accepts, odd ones favoured (layouts of one head are left out of a group when above 1)")
	fs.IntVar(&f.maxCapacity, "max-capacity", 512, "largest batch capacity C drawn")
	fs.StringVar(&f.results, "results", "kvharness-results", "folder for repro files of failures")
	fs.DurationVar(&f.timeout, "timeout", plugin.DefaultCallTimeout, "deadline of one plugin call; past it the plugin is killed as hung")
	fs.BoolVar(&f.json, "json", false, "print JSON instead of text")
	fs.StringVar(&f.backend, "backend", "auto", "where the pool lives: cpu (host shared memory), cuda (GPU memory), or auto (cuda when a GPU and a CUDA kernel are there)")
	fs.IntVar(&f.device, "device", 0, "CUDA device ordinal")
	fs.BoolVar(&f.graph, "graph", false, "capture each store in a CUDA graph at capacity C and replay it, as serving engines do")
	fs.IntVar(&f.jobs, "jobs", 0, "layout × padding combinations checked at once, each on a plugin process of its own (0: 4 on the cuda backend, where a case mostly waits, 1 on cpu)")
	fs.IntVar(&f.stress, "stress", 0, "check every case this many times, up to 4 at once on plugin processes of their own, and fail it if any run fails: a race that passes alone fails under load (0: once)")
	fs.StringVar(&f.sanitize, "sanitize", "", "run the plugin's processes under compute-sanitizer with this tool ("+strings.Join(plugin.SanitizerTools, ", ")+"); its findings join the report, with the case that ran (cuda backend)")
	fs.StringVar(&f.value, "value", "recipe", valueUsage)
	fs.IntVar(&f.maxFaults, "max-faults", 3, "stop once the same plugin fault (kind and call) happened this often; before that, restart the plugin and go on")
	f.trust.register(fs)
}

func (f *checkFlags) validate() error {
	if f.plugin == "" {
		return fmt.Errorf("--plugin is required (one of %s, or a path)", quoteList(plugin.BundledNames()))
	}
	if err := checkCaseFlags(f.cases, f.slots, f.headDim, "the kernel's"); err != nil {
		return err
	}
	switch {
	case f.pageSize < 1 || f.pageSize > 1<<16:
		return fmt.Errorf("--page-size %d: want 1..65536 tokens", f.pageSize)
	case f.heads < 0 || f.heads > layout.MaxHeads:
		return fmt.Errorf("--heads %d: want 1..%d KV heads a token (or none: each row draws)", f.heads, layout.MaxHeads)
	case f.jobs < 0 || f.jobs > 64:
		return fmt.Errorf("--jobs %d: want 0 (automatic) to 64", f.jobs)
	case f.stress < 0 || f.stress > 1000:
		return fmt.Errorf("--stress %d: want 0 (each case once) to 1000", f.stress)
	case f.maxFaults < 1:
		return fmt.Errorf("--max-faults %d: want at least 1", f.maxFaults)
	case f.timeout <= 0:
		return fmt.Errorf("--timeout %v: want a positive duration", f.timeout)
	case f.layoutFile != "" && f.layout != "all":
		return fmt.Errorf("--layout and --layout-file conflict: give one")
	case f.sanitize != "" && !oneOf(f.sanitize, plugin.SanitizerTools...):
		return fmt.Errorf("--sanitize %q: want one of %s", f.sanitize, strings.Join(plugin.SanitizerTools, ", "))
	}
	if _, err := parseValue(f.value); err != nil {
		return err
	}
	var err error
	f.want, err = arena.ParseWant(f.backend, f.device)
	return err
}

// checkCaseFlags refuses the case flags check and mutants share: --cases,
// --slots and --head-dim (each kind refuses its own: kind.Kind.Validate).
// whose is the kernel (or kernels) whose default --slots 0 stands for.
func checkCaseFlags(cases, slots, headDim int, whose string) error {
	switch {
	case cases < 1:
		return fmt.Errorf("--cases %d: want at least 1", cases)
	case slots != 0 && slots < 2:
		return fmt.Errorf("--slots %d: want at least 2 (slot 0 may be reserved), or 0 for %s default", slots, whose)
	case layout.CheckHeadDim(headDim) != nil:
		return fmt.Errorf("--head-dim %d: %v", headDim, layout.CheckHeadDim(headDim))
	}
	return nil
}

// valueUsage is the --value flag's help, the same for check, repro and
// mutants.
const valueUsage = "how fp8 values are judged: recipe (by the plugin's declared recipe: a scale within its ulps, codes of x over the stored scale) or exact (bit-exact with the reference encoding)"

// parseValue reads --value.
func parseValue(s string) (layout.Mode, error) {
	m, err := layout.ParseMode(s)
	if err != nil || s == "" {
		return m, fmt.Errorf("--value %q: want recipe or exact", s)
	}
	return m, nil
}

// jobsOn resolves --jobs 0 for a backend: on the GPU four jobs overlap a
// case's waits (measured: 718 cases/s with one, 1,377 with four, no more
// with eight, on an H200); on the CPU a case keeps a core busy.
func (f *checkFlags) jobsOn(p arena.Place) int {
	switch {
	case f.jobs > 0:
		return f.jobs
	case p.OnDevice():
		return 4
	default:
		return 1
	}
}

func runCheck(ctx context.Context, e *env, args []string) int {
	start := time.Now()
	var f checkFlags
	var showTimings bool
	var junitFile string
	fs := flags("check", "--plugin NAME|PATH [flags]", checkExamples, e)
	f.register(fs)
	var composed composeFlags
	composed.register(fs)
	fs.StringVar(&f.trace, "trace", "", "a JSONL trace recorded from an engine (kvharness_sdk.trace): --kernel sequence replays it and draws sequences that start as it does")
	fs.StringVar(&f.shard, "shard", "", "check part i of n of the rows (layout × padding, or the kind's profiles), as 2/3; each row keeps the seed it has in the whole run")
	fs.StringVar(&junitFile, "junit", "", junitUsage)
	fs.BoolVar(&showTimings, "timings", false, "print where the time went after the report, on stderr: setup, each row's opening and search, a failure's re-runs, shrinking and fresh-process check")
	if code, ok := parse(fs, args); !ok {
		return code
	}
	if err := noArgs(fs); err != nil {
		return e.errorf("%v", err)
	}
	if composed.on(fs) {
		return runCompose(ctx, e, &f, &composed, fs, junitFile)
	}
	f.draw = workload.Axes{HeadDim: !fs.Changed("head-dim"), PageSize: !fs.Changed("page-size"), Heads: !fs.Changed("heads")}
	if err := f.validate(); err != nil {
		return e.errorf("%v", err)
	}
	spec, err := shard.Parse(f.shard)
	if err != nil {
		return e.errorf("--%v", err)
	}
	if err := writableFolder(f.results); err != nil {
		return e.errorf("--results %s: %v; give a folder you can write, as in --results /tmp/kvharness-results", f.results, err)
	}
	if err := checkJUnitFile(junitFile); err != nil {
		return e.errorf("%v", err)
	}
	watch := watchFolder(f.results)
	if f.sanitize != "" && !fs.Changed("timeout") {
		f.timeout = plugin.SanitizerCallTimeout // a sanitizer instruments every kernel
	}
	s, err := openTrusted(ctx, f.plugin, f.variant, f.headDim, f.pageSize, f.timeout, f.trust, onGPU(f.want))
	if err != nil {
		return e.errorf("%v", err)
	}
	defer s.close()
	s.identify(f.plugin)
	san, err := f.sanitizer(ctx, s)
	if err != nil {
		return e.errorf("%v", err)
	}
	k, err := s.kernel(f.kernel)
	if err != nil {
		return e.errorf("%v", err)
	}
	p, release, err := f.params(s, k)
	if err != nil {
		return e.errorf("%v", err)
	}
	defer release()
	p.Shard = spec
	if f.trace != "" && !k.Traces {
		return e.errorf("--trace %s: traces are replayed by --kernel sequence, not %s", f.trace, k.Name)
	}
	p.Trace = f.trace
	g := progressOn(e, "check", "cases")
	var tm *timings
	if showTimings {
		tm = newTimings(start)
	}
	run, err := k.Check(tm.observe(observe(ctx, g)), s.kind(f.plugin), p)
	g.done()
	if err != nil {
		return e.errorf("%v", err)
	}
	if run.Finished() == 0 && run.Err != nil && !property.IsFault(run.Err) && !run.Interrupted() {
		// The first target would not open (an arena too large, a layout
		// the plugin refuses): a setup error, not a table of nothing.
		if code, stop := resourceError(e, run.Err, "--slots", p.Slots); stop {
			return code
		}
		return e.errorf("%v", run.Err)
	}
	if len(run.Rows) == 0 && run.Err == nil {
		return e.errorf("--shard %s owns no row of this check (it has fewer rows than shards); run fewer shards", spec)
	}
	code := finishCheck(e, run, f.json, f.results)
	if err := writeJUnit(junitFile, "kvharness check", checkSuite(run, start)); err != nil {
		return e.errorf("%v", err)
	}
	tm.write(e.stderr, time.Since(start))
	if san != nil && unclaimed(e, s, san) && code == exitPass {
		code = exitViolation
	}
	s.plugin.Close() // nothing of the plugin runs on while its leavings are looked for
	var logs []string
	if san != nil {
		logs = append(logs, filepath.Join(f.results, "sanitizer"))
	}
	return planted(e, code, watch, run, logs...)
}

// planted names the files that appeared in the results folder during the
// run that kvharness did not write (a plugin can write anywhere its user
// may): a run that found them exits 2, or 1 when a violation was found.
func planted(e *env, code int, w *folderWatch, run *report.Run, toolLogs ...string) int {
	var ours []string
	for _, f := range run.Failures() {
		ours = append(ours, f.ReproPath)
	}
	strange := w.strangers(ours, toolLogs...)
	if len(strange) == 0 {
		return code
	}
	fmt.Fprintf(e.stderr, "kvharness: --results %s: %d file%s appeared during the run that kvharness did not write: %s; a plugin (or another process) put %s there: do not replay %s; remove %s\n",
		w.dir, len(strange), report.Plural(len(strange)), strings.Join(strange, ", "), them(len(strange)), them(len(strange)), them(len(strange)))
	if code == exitViolation {
		return code
	}
	return exitError
}

func them(n int) string {
	if n == 1 {
		return "it"
	}
	return "them"
}

// finishCheck saves the repro files, prints the run and picks the exit status.
// The report comes first: a results folder that cannot be written must
// not hide the violation it was to hold.
func finishCheck(e *env, run *report.Run, asJSON bool, results string) int {
	saveErr := saveFailures(results, run)
	if asJSON {
		report.WriteJSON(e.stdout, run)
	} else {
		report.WriteText(e.stdout, run)
	}
	code := verdictCode(e, run)
	if saveErr != nil {
		return e.errorf("%v: a failure above has no repro file (the report says which); give --results a folder you can write", saveErr)
	}
	return code
}

// sanitizer restarts the session's plugin under compute-sanitizer, when
// --sanitize asks for it; its logs go into the results folder.
func (f *checkFlags) sanitizer(ctx context.Context, s *session) (*plugin.Sanitizer, error) {
	if f.sanitize == "" {
		return nil, nil
	}
	if f.want.Backend == arena.WantCPU {
		return nil, fmt.Errorf("--sanitize runs CUDA kernels under compute-sanitizer: it needs the cuda backend, not --backend cpu")
	}
	san, err := plugin.NewSanitizer(f.sanitize, filepath.Join(f.results, "sanitizer"))
	if err != nil {
		return nil, err
	}
	s.opts.Sanitizer = san
	if err := s.plugin.Sanitize(ctx, san); err != nil {
		return nil, err
	}
	return san, nil
}

// unclaimed prints what the sanitizer reported as its processes exited,
// after every case: findings no case was running for. It reports whether
// there were any.
func unclaimed(e *env, s *session, san *plugin.Sanitizer) bool {
	s.plugin.Close() // its last records are written as it exits
	fs := san.Orphans()
	if len(fs) == 0 {
		return false
	}
	fmt.Fprintf(e.stdout, "\ncompute-sanitizer (%s) reported %d error%s as the plugin's processes exited, with no case running:\n",
		san.Tool, len(fs), report.Plural(len(fs)))
	for _, f := range fs {
		fmt.Fprintf(e.stdout, "  %v\n", f)
		for _, l := range f.Lines[1:min(len(f.Lines), 4)] {
			fmt.Fprintf(e.stdout, "    %s\n", l)
		}
	}
	fmt.Fprintf(e.stdout, "  logs: %s\n", san.Logs)
	return true
}

// resourceError prints a run's error that is about the machine, not the
// plugin (an arena that does not fit), as the flag that asked for it:
// stop is false for any other error.
func resourceError(e *env, err error, flag string, asked int) (code int, stop bool) {
	var se *shm.SpaceError
	if !errors.As(err, &se) {
		return 0, false
	}
	if asked == 0 { // each kernel's default pool: no one figure to scale
		return e.errorf("%s (each kernel's default): %v (give a smaller %s)", flag, se, flag), true
	}
	if fits := se.Fits(asked); fits >= 2 {
		return e.errorf("%s %d: %v (%s %d fits)", flag, asked, se, flag, fits), true
	}
	return e.errorf("%s %d: %v", flag, asked, se), true
}

// params turns the flags into a kind's check settings: the layouts the
// kind runs over, the backend, the jobs. The returned function releases
// the backend's device.
func (f *checkFlags) params(s *session, k *kind.Kind) (kind.Params, func(), error) {
	none := func() {}
	if f.graph && !k.Graphs {
		return kind.Params{}, none, fmt.Errorf("--graph applies to stores; %s kernels run eagerly", k.Name)
	}
	p := kind.Params{Variant: f.variant, Padding: f.padding, Addressing: f.addressing, Cases: f.cases, Seed: f.seed, MaxFaults: f.maxFaults, Stress: f.stress,
		Setup: kind.Setup{Slots: f.slots, MaxCapacity: f.maxCapacity, HeadDim: f.headDim, PageSize: f.pageSize, Graph: f.graph,
			Draw: f.draw, Far: f.slots == 0}}
	p.Value, _ = parseValue(f.value) // validated
	if err := k.CheckParams(p); err != nil {
		return p, none, err
	}
	if k.Layouts {
		layouts, err := kind.LayoutsHeads(s.desc, f.layout, f.layoutFile, f.heads, f.headDim, f.pageSize)
		if err != nil {
			return p, none, err
		}
		p.Layouts = layouts
	}
	backend, release, err := f.want.Choose(s.desc.Backends)
	if err != nil {
		return p, none, err
	}
	p.Backend = backend
	if p.Slots == 0 {
		p.Slots = k.PoolSlots(backend.Place(), f.pageSize)
	}
	if f.graph && !backend.Place().OnDevice() {
		release()
		return p, none, fmt.Errorf("--graph needs the cuda backend (CUDA graphs); this run is on the cpu backend")
	}
	if f.sanitize != "" && !backend.Place().OnDevice() {
		release()
		return p, none, fmt.Errorf("--sanitize needs the cuda backend (compute-sanitizer checks CUDA kernels); this run is on the cpu backend")
	}
	p.Jobs = f.jobsOn(backend.Place())
	return p, release, nil
}

// saveFailures writes a repro file per failure before anything is
// reported, named after the plugin's own name, and puts its path into
// the failure, with the --plugin its replay line must name when the
// plugin is no bundled one. A failure whose file could not be saved notes
// why (the report prints it there); the first such error is returned.
func saveFailures(dir string, run *report.Run) error {
	var first error
	for _, f := range run.Failures() {
		f.Repro.Own = f.Plugin
		path, err := f.Repro.Save(dir)
		if err != nil {
			f.ReproErr = err
			first = cmp.Or(first, err)
			continue
		}
		f.ReproPath = path
		f.ReplayPlugin = replayPlugin(f.Repro.Plugin)
	}
	return first
}

// replayPlugin is the --plugin a replay line names for a plugin named arg
// in the repro file: none for a bundled plugin, which repro runs from the
// file; the path or command itself otherwise, since repro runs no path or
// command a file names unless the command line names it too.
func replayPlugin(arg string) string {
	if plugin.IsBundled(arg) {
		return ""
	}
	return arg
}

// verdictCode prints plugin faults and picks the exit status: a
// violation is 1 (the kernel wrote wrong bytes); otherwise any plugin
// fault, survived or not, is 2 (the plugin itself failed).
func verdictCode(e *env, run *report.Run) int {
	for _, row := range run.Rows {
		for _, f := range row.Faults {
			fmt.Fprintf(e.stderr, "\nkvharness: %s: %v\n  case: %v\n  (plugin restarted, run continued)\n", rowName(row), f.Err, f.Case)
		}
	}
	if run.Interrupted() {
		fmt.Fprintf(e.stderr, "\nkvharness: interrupted: %d rows finished and are reported as found; a row marked %s was not judged, and rows after it did not run\n",
			run.Finished(), report.Stopped)
		if run.Failed() {
			return exitViolation
		}
		return exitInterrupted
	}
	if run.Err != nil {
		fmt.Fprintf(e.stderr, "\nkvharness: %v\n", run.Err)
		for _, row := range run.Rows {
			if row.FaultCase != nil {
				fmt.Fprintf(e.stderr, "  while running %s case %v\n", rowName(row), row.FaultCase)
			}
		}
	}
	switch {
	case run.Failed():
		return exitViolation
	case run.Faulted():
		return exitError
	}
	return exitPass
}

// rowName names a row in fault messages: its layout and label.
func rowName(row report.Row) string {
	if row.Layout == nil {
		return row.Label
	}
	return row.Layout.Name + "/" + row.Label
}
