package main

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/kvharness/kvharness/harness/arena"
	"github.com/kvharness/kvharness/harness/benchrun"
	"github.com/kvharness/kvharness/harness/kernels"
	"github.com/kvharness/kvharness/harness/kind"
	"github.com/kvharness/kvharness/harness/measure"
	"github.com/kvharness/kvharness/harness/plugin"
	"github.com/kvharness/kvharness/harness/protocol"
	"github.com/kvharness/kvharness/harness/results"
	"github.com/kvharness/kvharness/harness/shard"
	"github.com/kvharness/kvharness/harness/telemetry"
)

const benchExamples = `  kvharness bench --plugin fusedstore --out bench-out
  kvharness bench --kernel load --plugin layerload --out load-out
  kvharness bench --kernel transfer --plugin pdtransfer --out transfer-out
  kvharness bench --plugin fusedstore --plugin bf16scatter --layout bf16 --tokens 1,512,262144 --out night
  kvharness bench --matrix bench/matrix-cpu.json --out night --resume --strict
  kvharness bench --matrix bench/matrix-gpu.json --shard 2/3 --out shard-2   # then kvharness merge
  kvharness bench --plugin fusedstore --min-samples 1000 --max-noise 0.5 --max-time 20s --quantiles 0.5,0.2,0.8
  kvharness compare bench/baselines/cpu.txt night/bench.txt
`

type benchFlags struct {
	kernel                                string
	plugins, layouts                      []string
	tokens, matrix, out, backend, variant string
	modes, caches, timings                []string
	device, rotate, slotRun, passes       int
	resume, quick, strict                 bool
	callTimeout                           time.Duration
	quantiles                             []float64
	shard, format                         string
	slots                                 int
	stop                                  stopFlags
	pins                                  []string // --plugin-sha256: HEX, or NAME=HEX per plugin
	noMTLS                                bool
}

// stopFlags are nvbench's stopping rules (its --min-samples, --max-noise,
// --min-time and --timeout, which kvharness calls --max-time: --timeout is
// a plugin call's deadline in every command), applied to every cell of
// the matrix over its per-timing rules. Times are durations with units,
// as every duration flag of kvharness takes them.
type stopFlags struct {
	minSamples       int
	maxNoise         float64 // percent
	minTime, maxTime time.Duration
}

func runBench(ctx context.Context, e *env, args []string) int {
	var f benchFlags
	fs := flags("bench", "--plugin P [flags] | --matrix FILE [flags]", benchExamples, e)
	fs.StringVar(&f.kernel, "kernel", "", "kernel to measure: "+kernels.Names()+" (default: the matrix's, else store)")
	fs.StringSliceVar(&f.plugins, "plugin", nil, "plugins to measure (repeat or comma-separate)")
	fs.StringVar(&f.variant, "variant", "", "plugin variant")
	fs.StringSliceVar(&f.layouts, "layout", []string{"all"}, "layouts, or all")
	fs.StringVar(&f.tokens, "tokens", "", "comma-separated batch sizes (default: the kernel's; stores 1,32,512,4096,32768,262144 on a GPU, 1,32,512,4096 on the cpu backend; page movers 1, 8 and 64 pages)")
	fs.StringSliceVar(&f.modes, "mode", []string{"eager", "graph"}, "eager and/or graph (graph needs the cuda backend)")
	fs.StringSliceVar(&f.caches, "cache", []string{"hot", "cold"}, "hot and/or cold (caches flushed before each launch; cold is timed per launch only)")
	fs.StringSliceVar(&f.timings, "timing", []string{"per-launch", "batched"}, "per-launch (tail latency) and/or batched (throughput)")
	fs.IntVar(&f.rotate, "rotate", 1, "pools with rows and slots of their own (a model's layers; copy buffers) each cell's launches take in turn, so none finds the last one's data in caches; 1 repeats one")
	fs.IntVar(&f.slotRun, "slot-run", 1, "draw the slots in runs of this many consecutive slots, page-aligned (a paged allocator's pages); 1 draws each alone")
	fs.IntVar(&f.passes, "passes", benchrun.DefaultPasses, "runs per cell: the matrix is measured this many times over, each pass a short run of every cell by plugin processes of its own")
	fs.Float64SliceVar(&f.quantiles, "quantiles", benchrun.DefaultQuantiles, "quantiles to report, as do_bench's quantiles= (0.5 is the median, 0.99 the p99)")
	fs.IntVar(&f.stop.minSamples, "min-samples", 0, "nvbench --min-samples: samples a cell takes at least, over all its runs (default: the matrix's, per timing)")
	fs.Float64Var(&f.stop.maxNoise, "max-noise", 0, "nvbench --max-noise: relative standard deviation, in percent, under which a cell stops (default: the matrix's; per-launch cells: none)")
	fs.DurationVar(&f.stop.minTime, "min-time", 0, "nvbench --min-time: timed launches a cell takes at least, summed, as a duration (500ms)")
	fs.DurationVar(&f.stop.maxTime, "max-time", 0, "nvbench's --timeout: wall time after which a cell stops, unconverged, as a duration (20s; default: the matrix's, per timing)")
	fs.StringVar(&f.matrix, "matrix", "", "JSON matrix file (flags given explicitly override it)")
	fs.StringVar(&f.out, "out", "kvharness-bench", "output folder: runs.jsonl, cells.jsonl, bench.txt, table.txt, night.json, plots/")
	fs.StringVar(&f.shard, "shard", "", "run part i of n of the matrix (units of plugin × layout × tokens), as 2/3; join the parts with kvharness merge")
	fs.StringVar(&f.format, "format", "text", "the table on stdout: text, md (a pull request comment), csv or json")
	fs.BoolVar(&f.resume, "resume", false, "keep the runs already in --out and measure only the rest")
	fs.BoolVar(&f.strict, "strict", false, "exit 2 when a cell lacks the runs or samples a comparison needs (a nightly gate)")
	fs.BoolVar(&f.quick, "quick", false, "short stopping rules (smoke runs; numbers are rough)")
	fs.IntVar(&f.slots, "slots", 0, "slots in each cell's pool (default: the matrix's; 1048576 without one)")
	fs.StringSliceVar(&f.pins, "plugin-sha256", nil, "refuse to run a plugin unless its binary (a command plugin: its script) has this SHA-256 (hex): HEX for a matrix of one plugin, else NAME=HEX for each plugin pinned")
	fs.BoolVar(&f.noMTLS, "no-mtls", false, "no mutual TLS on the plugin channel (for plugins that cannot negotiate go-plugin's AutoMTLS)")
	fs.StringVar(&f.backend, "backend", "auto", "cpu, cuda or auto")
	fs.IntVar(&f.device, "device", 0, "CUDA device ordinal")
	fs.DurationVar(&f.callTimeout, "timeout", 30*time.Second, "deadline of one plugin call; past it the plugin is killed as hung (as in check)")
	if code, ok := parse(fs, args); !ok {
		return code
	}
	if err := noArgs(fs); err != nil {
		return e.errorf("%v", err)
	}
	return benchRun(ctx, e, &f, fs.Changed)
}

// buildMatrix is the matrix the flags ask for, over the matrix file's or
// the defaults; tokens, when not nil, gives the kernel's default batch
// sizes for a run that names none (neither --tokens nor a matrix file).
func (f *benchFlags) buildMatrix(changed func(string) bool, tokens func(k protocol.Kernel, pageSize int) ([]int, error)) (benchrun.Matrix, error) {
	m := benchrun.Default()
	if f.matrix != "" {
		var err error
		if m, err = benchrun.LoadMatrix(f.matrix); err != nil {
			return m, err
		}
	}
	if changed("kernel") {
		m.Kernel = protocol.Kernel(f.kernel)
	}
	if m.Kernel == "" {
		m.Kernel = kernels.BenchDefault()
	}
	if len(f.plugins) > 0 {
		m.Plugins = f.plugins
	}
	if changed("variant") {
		m.Variant = f.variant
	}
	if changed("layout") || f.matrix == "" {
		m.Layouts = f.layouts
	}
	if changed("rotate") {
		m.Rotate = f.rotate
	}
	if changed("slot-run") {
		m.SlotRun = f.slotRun
	}
	if changed("passes") {
		m.Passes = f.passes
	}
	if changed("quantiles") {
		m.Quantiles = f.quantiles
	}
	if changed("slots") {
		m.Slots = f.slots
	}
	switch {
	case f.tokens != "":
		toks, err := parseInts(f.tokens)
		if err != nil {
			return m, fmt.Errorf("--tokens: %w", err)
		}
		m.Tokens = toks
	case f.matrix == "" && tokens != nil:
		toks, err := tokens(m.Kernel, m.PageSize)
		if err != nil {
			return m, err
		}
		m.Tokens = toks
	}
	if err := f.enums(&m, changed); err != nil {
		return m, err
	}
	if f.quick {
		m.PerLaunch.MinSamples, m.PerLaunch.TimeLimit = 60, 300*time.Millisecond
		m.Batched.MinSamples, m.Batched.TimeLimit = 12, 300*time.Millisecond
		m.Cold.MinSamples, m.Cold.TimeLimit = 12, 600*time.Millisecond
	}
	if err := f.stop.apply(&m); err != nil {
		return m, err
	}
	return m, m.Validate()
}

// apply sets the given stopping rules on every timing's criterion.
func (s stopFlags) apply(m *benchrun.Matrix) error {
	if s.minSamples < 0 || s.maxNoise < 0 {
		return fmt.Errorf("--min-samples and --max-noise must not be negative")
	}
	for _, c := range []*measure.Criterion{&m.PerLaunch, &m.Batched, &m.Cold} {
		if s.minSamples > 0 {
			c.MinSamples = s.minSamples
		}
		if s.maxNoise > 0 {
			c.MaxNoise = s.maxNoise / 100
		}
		if s.minTime > 0 {
			c.MinTime = s.minTime
		}
		if s.maxTime > 0 {
			c.TimeLimit = s.maxTime
		}
	}
	return nil
}

func (f *benchFlags) enums(m *benchrun.Matrix, changed func(string) bool) error {
	var err error
	if changed("mode") || f.matrix == "" {
		if m.Modes, err = enum[results.Mode]("mode", f.modes, "eager", "graph"); err != nil {
			return err
		}
	}
	if changed("cache") || f.matrix == "" {
		if m.Caches, err = enum[results.Cache]("cache", f.caches, "hot", "cold"); err != nil {
			return err
		}
	}
	if changed("timing") || f.matrix == "" {
		if m.Timings, err = enum[results.Timing]("timing", f.timings, "per-launch", "batched"); err != nil {
			return err
		}
	}
	return nil
}

// enum converts a flag's values, each of which must be one of allowed.
func enum[T ~string](flag string, values []string, allowed ...string) ([]T, error) {
	out := make([]T, 0, len(values))
	for _, v := range values {
		if !oneOf(v, allowed...) {
			return nil, fmt.Errorf("--%s %q: want %s", flag, v, strings.Join(allowed, " or "))
		}
		out = append(out, T(v))
	}
	return out, nil
}

func parseInts(s string) ([]int, error) {
	var out []int
	for _, part := range strings.Split(s, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(part))
		if err != nil {
			return nil, fmt.Errorf("%q is not a number", part)
		}
		out = append(out, n)
	}
	return out, nil
}

func benchRun(ctx context.Context, e *env, f *benchFlags, changed func(string) bool) int {
	if in := overwrites(f.out, benchrun.OutputFiles, f.matrix); f.matrix != "" && in != "" {
		return e.errorf("bench: --out %s would write over --matrix %s, which it reads; give the matrix from elsewhere, or another --out", f.out, in)
	}
	want, err := arena.ParseWant(f.backend, f.device)
	if err != nil {
		return e.errorf("%v", err)
	}
	backend, release, err := want.Choose([]protocol.Backend{protocol.BackendSHM, protocol.BackendCUDA})
	if err != nil {
		return e.errorf("%v", err)
	}
	defer release()
	m, err := f.buildMatrix(changed, func(name protocol.Kernel, pageSize int) ([]int, error) {
		k, err := benchKind(name)
		if err != nil || k.Bench.Tokens == nil {
			return benchrun.DefaultTokens, err
		}
		return k.Bench.Tokens(backend.Place().OnDevice(), pageSize), nil
	})
	if err != nil {
		return e.errorf("%v", err)
	}
	k, err := benchKind(m.Kernel)
	if err != nil {
		return e.errorf("%v", err)
	}
	spec, err := shard.Parse(f.shard)
	if err != nil {
		return e.errorf("--%v", err)
	}
	format, err := benchrun.ParseFormat(f.format)
	if err != nil {
		return e.errorf("%v", err)
	}
	pins, err := benchPins(f.pins, m.Plugins)
	if err != nil {
		return e.errorf("%v", err)
	}
	// Everything that can refuse the run without starting a plugin does
	// so before the folder is touched.
	if err := benchrun.CheckOut(f.out); err != nil {
		return e.errorf("%v", err)
	}
	if err := refuseNight(f.out, f.resume); err != nil {
		return e.errorf("%v", err)
	}
	dir, err := openDir()
	if err != nil {
		return e.errorf("%v", err)
	}
	defer dir.Close()
	r := &benchrun.Runner{Matrix: m, Kind: k, Shard: spec, Dir: dir, Backend: backend, OnGPU: backend.Place().OnDevice(), Env: benchEnv()}
	r.PeakGBps = peakGBps(r.OnGPU, f.device)
	r.Start = func(ctx context.Context, name string) (*plugin.Plugin, error) {
		spec, err := resolve(name)
		if err != nil {
			return nil, err
		}
		opts, err := trust{sha256: pins[name], noMTLS: f.noMTLS}.options(dir, f.variant, f.callTimeout)
		if err != nil {
			return nil, err
		}
		return plugin.StartSpec(ctx, spec, opts)
	}
	p, err := r.Plan(ctx)
	if err != nil {
		if interrupted(ctx) { // the plugins' Describe calls it cancelled
			fmt.Fprintln(e.stderr, nothingMeasured)
			return exitInterrupted
		}
		return e.errorf("%v", err)
	}
	if len(p.Units()) == 0 {
		return e.errorf("shard %s owns no unit of this matrix (it has fewer units than shards); run fewer shards", spec)
	}
	benchNotes(e, r.OnGPU, m, k.Bench)
	return benchMeasure(ctx, e, f, r, p, format)
}

// benchMeasure takes the output folder, runs the plan into it and writes
// the night.
func benchMeasure(ctx context.Context, e *env, f *benchFlags, r *benchrun.Runner, p *benchrun.Plan, format benchrun.Format) int {
	out, err := benchrun.OpenOut(f.out)
	if err != nil {
		return e.errorf("%v", err)
	}
	kept := false
	defer func() {
		if kept {
			out.Close()
		} else {
			out.Abandon()
		}
	}()
	// Again under the lock: another bench may have finished a night here
	// since the check above.
	if err := refuseNight(f.out, f.resume); err != nil {
		return e.errorf("%v", err)
	}
	journalPath := filepath.Join(f.out, benchrun.JournalFile)
	if r.Previous, err = previousRuns(journalPath, f.resume, e); err != nil {
		return e.errorf("%v", err)
	}
	if err := resumedHere(f.out, r.Env, r.OnGPU, r.Previous); err != nil {
		return e.errorf("%v", err)
	}
	journal, err := results.OpenLog(journalPath)
	if err != nil {
		return e.errorf("%v", err)
	}
	defer journal.Close()
	r.Journal = journal
	g := progressOn(e, "bench", "runs")
	r.Observer = &benchObserver{g: g}
	night, runErr := r.Run(ctx, p)
	g.done()
	kept = len(night.Cells) > 0
	if len(night.Dropped) > 0 {
		fmt.Fprintf(e.stderr, "kvharness: warning: %d runs of the earlier night (such as %s pass %d) are not in this night's matrix (another plugin version, variant or geometry): left out of the outputs, kept in %s\n",
			len(night.Dropped), night.Dropped[0].Identity.Key(), night.Dropped[0].Pass, journalPath)
	}
	return benchFinish(ctx, e, f, format, night, benchrun.NewManifest(p, r.Matrix, r.Shard, r.Env), runErr)
}

// benchKind is the kind a night measures, which must be one bench
// measures.
func benchKind(name protocol.Kernel) (*kind.Kind, error) {
	k, err := kernels.Lookup(name)
	if err != nil {
		return nil, fmt.Errorf("--kernel %s: %w", name, err)
	}
	if k.Bench == nil {
		return nil, fmt.Errorf("--kernel %s: kvharness bench does not measure %s kernels", name, name)
	}
	return k, nil
}

// benchPins reads --plugin-sha256: a bare sum pins a matrix's only
// plugin; NAME=SUM pins the plugin the matrix names NAME. Each sum is
// checked as check checks its pin.
func benchPins(flags, plugins []string) (map[string]string, error) {
	pins := map[string]string{}
	for _, v := range flags {
		name, sum, named := strings.Cut(v, "=")
		if !named {
			if len(plugins) != 1 {
				return nil, fmt.Errorf("--plugin-sha256 %s pins one plugin, and this matrix has %d (%s): write NAME=SHA256 for each plugin to pin", v, len(plugins), quoteList(plugins))
			}
			name, sum = plugins[0], v
		}
		if !slices.Contains(plugins, name) {
			return nil, fmt.Errorf("--plugin-sha256 %s: %q is not a plugin of this matrix; want one of %s", v, name, quoteList(plugins))
		}
		if _, ok := pins[name]; ok {
			return nil, fmt.Errorf("--plugin-sha256: %s is pinned twice; give one sum per plugin", name)
		}
		if _, err := (trust{sha256: sum}).options(nil, "", time.Second); err != nil {
			return nil, err
		}
		pins[name] = sum
	}
	return pins, nil
}

func benchNotes(e *env, onGPU bool, m benchrun.Matrix, b *kind.Bench) {
	if !onGPU && hasGraph(m) && slices.Contains(b.Modes, results.Graph) {
		fmt.Fprintln(e.stderr, "kvharness: note: graph cells are skipped on the cpu backend (no CUDA graphs)")
	}
	if slices.Contains(m.Caches, results.Cold) && slices.Contains(m.Timings, results.Batched) && slices.Contains(b.Caches, results.Cold) &&
		slices.Contains(b.Timings, results.Batched) {
		fmt.Fprintln(e.stderr, "kvharness: note: cold cells are timed per launch only (a batch runs hot after its first launch)")
	}
	if len(m.Modes) > len(b.Modes) || len(m.Caches) > len(b.Caches) || len(m.Timings) > len(b.Timings) {
		fmt.Fprintf(e.stderr, "kvharness: note: %s kernels are timed %s, %s, %s: the matrix's other modes, caches and timings make no cell of them\n",
			m.Kernel, joinAs(b.Modes), joinAs(b.Caches), joinAs(b.Timings))
	}
}

// joinAs lists values with "or": "eager or graph".
func joinAs[T ~string](vs []T) string {
	out := make([]string, len(vs))
	for i, v := range vs {
		out[i] = string(v)
	}
	return strings.Join(out, " or ")
}

// benchFinish writes the night and picks the exit status. An interrupted
// night prints the table of what it finished and writes no outputs: its
// runs are in the journal already, and the --resume that finishes the
// night writes them whole (writing them now, plots and all, would hold
// the exit for seconds of fsyncs on a busy machine).
func benchFinish(ctx context.Context, e *env, f *benchFlags, format benchrun.Format, night *benchrun.Night, man benchrun.Manifest, runErr error) int {
	journal := filepath.Join(f.out, benchrun.JournalFile)
	if runErr != nil && interrupted(ctx) {
		return benchInterrupted(e, format, night, man, journal)
	}
	if len(night.Cells) > 0 {
		if code := writeNight(e, f.out, format, night.Cells, man); code != exitPass {
			return code
		}
	}
	if runErr != nil {
		if code, stop := resourceError(e, runErr, "--slots", man.Matrix.Slots); stop {
			return code
		}
		if len(night.Cells) == 0 {
			return e.errorf("%v", runErr)
		}
		return e.errorf("%v (finished runs are kept in %s; rerun with --resume)", runErr, journal)
	}
	return lackingCells(e, night.Lacking, f.strict)
}

// nothingMeasured is a night interrupted before its first run finished.
const nothingMeasured = "kvharness: interrupted before any run finished: nothing was measured or kept"

// benchInterrupted reports an interrupted night: the table of its cells
// so far and what the journal kept.
func benchInterrupted(e *env, format benchrun.Format, night *benchrun.Night, man benchrun.Manifest, journal string) int {
	if len(night.Cells) == 0 {
		fmt.Fprintln(e.stderr, nothingMeasured)
		return exitInterrupted
	}
	if err := benchrun.WriteTable(e.stdout, night.Cells, format); err != nil {
		return e.errorf("write table: %v", err)
	}
	whole := 0
	for _, c := range night.Cells {
		if len(c.Runs) == man.Matrix.RunsPerCell() {
			whole++
		}
	}
	fmt.Fprintf(e.stderr, "kvharness: interrupted: %d cells (copy and empty references included) have all %d runs, %d more some of them (the table above); the finished runs are kept in %s: rerun with --resume to finish the night and write its files\n",
		whole, man.Matrix.RunsPerCell(), len(night.Cells)-whole, journal)
	return exitInterrupted
}

// writeNight writes a night's (or a merge's) files and its table.
func writeNight(e *env, out string, format benchrun.Format, cells []results.Cell, man benchrun.Manifest) int {
	warnings, err := benchrun.WriteOutputs(out, cells, man)
	for _, w := range warnings {
		fmt.Fprintf(e.stderr, "kvharness: warning: %v\n", w)
	}
	if err != nil {
		return e.errorf("write outputs: %v", err)
	}
	if err := benchrun.WriteTable(e.stdout, cells, format); err != nil {
		return e.errorf("write table: %v", err)
	}
	fmt.Fprintf(e.stderr, "kvharness: %d cells in %s (%s, %s, %s, %s, %s/)\n", len(cells), out, benchrun.LogFile, benchrun.BenchFile,
		benchrun.TableFile, benchrun.ManifestFile, benchrun.PlotDir)
	return exitPass
}

// lackingCells warns of cells a comparison cannot judge; under strict they
// fail the night.
func lackingCells(e *env, lacking []error, strict bool) int {
	if len(lacking) == 0 {
		return exitPass
	}
	var b strings.Builder
	for i, err := range lacking[:min(3, len(lacking))] {
		if i > 0 {
			b.WriteString("; ")
		}
		b.WriteString(err.Error())
	}
	msg := fmt.Sprintf("%d cells lack the runs or samples a comparison needs (%s): raise --max-time or lower --min-samples (or --resume a cut-short night)", len(lacking), b.String())
	if strict {
		return e.errorf("%s", msg)
	}
	fmt.Fprintf(e.stderr, "kvharness: warning: %s\n", msg)
	return exitPass
}

// refuseNight refuses, without --resume, a folder that holds a night: its
// runs would be measured again beside the old ones. A file of no bytes
// holds none.
func refuseNight(out string, resume bool) error {
	if resume {
		return nil
	}
	for _, name := range []string{benchrun.JournalFile, benchrun.LogFile} {
		path := filepath.Join(out, name)
		if st, err := os.Lstat(path); err == nil && st.Size() > 0 {
			return fmt.Errorf("%s exists: pass --resume to continue that night, or choose another --out", path)
		}
	}
	return nil
}

// previousRuns reads the journal of a resumed night.
func previousRuns(path string, resume bool, e *env) ([]results.Run, error) {
	if !resume {
		return nil, nil
	}
	l, err := results.ReadRunsFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	for _, w := range l.Warnings {
		fmt.Fprintf(e.stderr, "kvharness: warning: %v\n", w)
	}
	return l.Runs, nil
}

// resumedHere refuses to resume a night measured on another device or at
// another commit: its runs would be credited to this machine and this
// build, and compare would judge them as this one's. A finished night says
// both in its manifest; an interrupted one's journal says the device of
// each run (as its plugin reported it: "cpu" on the host backend).
func resumedHere(out string, env results.Env, onGPU bool, prev []results.Run) error {
	here := fmt.Sprintf("%s at commit %s", benchrun.Device(env), orUnknown(env.Commit))
	man, err := benchrun.ReadManifest(filepath.Join(out, benchrun.ManifestFile))
	switch {
	case err == nil && (man.Device != benchrun.Device(env) || man.Commit != env.Commit):
		return fmt.Errorf("--resume %s: that night was measured on %s at commit %s, and this run is on %s: its runs would be credited to this machine and build; resume it where it ran, or give another --out",
			out, man.Device, orUnknown(man.Commit), here)
	case err != nil && !errors.Is(err, fs.ErrNotExist):
		return fmt.Errorf("--resume %s: %w", out, err)
	}
	want := "cpu"
	if onGPU {
		want = env.Device // the GPU's name; unknown without NVML
	}
	for _, r := range prev {
		if r.Device != "" && want != "" && r.Device != want {
			return fmt.Errorf("--resume %s: its runs were measured on %s (such as %s pass %d), and this run is on %s; resume it where it ran, or give another --out",
				out, r.Device, r.Identity.Key(), r.Pass, here)
		}
	}
	return nil
}

func orUnknown(s string) string {
	if s == "" {
		return "unknown"
	}
	return s
}

func hasGraph(m benchrun.Matrix) bool { return slices.Contains(m.Modes, results.Graph) }

func benchEnv() results.Env {
	env := results.LocalEnv(time.Now().UTC())
	env.Commit, env.CPU = commit(), cpuModel()
	if snap, err := telemetry.Collect(telemetry.NewLibrary()); err == nil && len(snap.Devices) > 0 {
		d := snap.Devices[0]
		env.Device, env.Driver = d.Name, snap.DriverVersion
		if d.SMClockMHz != nil {
			env.SMClockMHz = int(*d.SMClockMHz)
		}
		if d.MemClockMHz != nil {
			env.MemClockMHz = int(*d.MemClockMHz)
		}
	}
	return env
}

func peakGBps(onGPU bool, device int) float64 {
	if !onGPU {
		return 0
	}
	snap, err := telemetry.Collect(telemetry.NewLibrary())
	if err != nil || device >= len(snap.Devices) || snap.Devices[device].PeakMemoryBandwidthGBps == nil {
		return 0
	}
	return *snap.Devices[device].PeakMemoryBandwidthGBps
}

// cpuModel is the host CPU's model name, as go test writes it in its
// "cpu:" line, so that nights on two kinds of CPU are told apart.
func cpuModel() string {
	data, err := os.ReadFile("/proc/cpuinfo")
	if err != nil {
		return ""
	}
	for _, line := range strings.Split(string(data), "\n") {
		if k, v, ok := strings.Cut(line, ":"); ok && strings.TrimSpace(k) == "model name" {
			return strings.TrimSpace(v)
		}
	}
	return ""
}

// buildCommit is the commit a release build was made from, set by
// scripts/gpu-build (-X main.buildCommit=...): such a binary runs where
// any git checkout, if there is one, need not be its source.
var buildCommit string

// commit names the source: the build's commit, else git when it is there
// (with "-dirty" when tracked files differ from the commit, so a night is
// never credited to a commit it does not match), else the commit file a
// GPU build leaves beside the binary.
func commit() string {
	if buildCommit != "" {
		return buildCommit
	}
	if out, err := exec.Command("git", "rev-parse", "--short", "HEAD").Output(); err == nil {
		c := strings.TrimSpace(string(out))
		if st, err := exec.Command("git", "status", "--porcelain", "--untracked-files=no").Output(); err == nil && len(st) > 0 {
			c += "-dirty"
		}
		return c
	}
	if exe, err := os.Executable(); err == nil {
		if b, err := os.ReadFile(filepath.Join(filepath.Dir(exe), "commit")); err == nil {
			return strings.TrimSpace(string(b))
		}
	}
	return ""
}
