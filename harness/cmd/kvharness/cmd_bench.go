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

	"golang.org/x/term"

	"github.com/kvharness/kvharness/harness/arena"
	"github.com/kvharness/kvharness/harness/benchrun"
	"github.com/kvharness/kvharness/harness/plugin"
	"github.com/kvharness/kvharness/harness/protocol/kvpb"
	"github.com/kvharness/kvharness/harness/results"
	"github.com/kvharness/kvharness/harness/telemetry"
)

func init() {
	register("bench", "measure throughput and tail latency over a matrix of cells", runBench)
}

const benchExamples = `  kvharness bench --plugin fusedstore --out bench-out
  kvharness bench --plugin fusedstore --plugin bf16scatter --layout bf16 --tokens 1,512,262144 --out night
  kvharness bench --matrix bench/matrix.json --out night --resume
  kvharness bench --plugin fusedstore --tokens 262144 --cache hot --timing batched --rotate 4 --out rotated
  kvharness compare bench/baselines/cpu.txt night/bench.txt
`

type benchFlags struct {
	plugins, layouts                      []string
	tokens, matrix, out, backend, variant string
	modes, caches, timings                []string
	device, rotate, slotRun               int
	resume, quick                         bool
	timeout                               time.Duration
}

func runBench(ctx context.Context, e *env, args []string) int {
	var f benchFlags
	fs := flags("bench", "--plugin P [flags] | --matrix FILE [flags]", benchExamples, e)
	fs.StringSliceVar(&f.plugins, "plugin", nil, "plugins to measure (repeat or comma-separate)")
	fs.StringVar(&f.variant, "variant", "", "plugin variant")
	fs.StringSliceVar(&f.layouts, "layout", []string{"all"}, "layouts, or all")
	fs.StringVar(&f.tokens, "tokens", "", "comma-separated batch sizes (default 1,32,512,4096,32768,262144)")
	fs.StringSliceVar(&f.modes, "mode", []string{"eager", "graph"}, "eager and/or graph (graph needs the cuda backend)")
	fs.StringSliceVar(&f.caches, "cache", []string{"hot", "cold"}, "hot and/or cold (caches flushed before each launch; cold is timed per launch only)")
	fs.StringSliceVar(&f.timings, "timing", []string{"per-launch", "batched"}, "per-launch (tail latency) and/or batched (throughput)")
	fs.IntVar(&f.rotate, "rotate", 1, "pools with rows and slots of their own (a model's layers; copy buffers) each cell's launches take in turn, so none finds the last one's data in caches; 1 repeats one")
	fs.IntVar(&f.slotRun, "slot-run", 1, "draw the slots in runs of this many consecutive slots, page-aligned (a paged allocator's pages); 1 draws each alone")
	fs.StringVar(&f.matrix, "matrix", "", "JSON matrix file (flags given explicitly override it)")
	fs.StringVar(&f.out, "out", "kvharness-bench", "output folder: cells.jsonl, bench.txt, table.txt, plots/")
	fs.BoolVar(&f.resume, "resume", false, "keep the cells already in --out and measure only the rest")
	fs.BoolVar(&f.quick, "quick", false, "short stopping rules (smoke runs; numbers are rough)")
	fs.StringVar(&f.backend, "backend", "auto", "cpu, cuda or auto")
	fs.IntVar(&f.device, "device", 0, "CUDA device ordinal")
	fs.DurationVar(&f.timeout, "timeout", 30*time.Second, "deadline of one plugin call")
	if code, ok := parse(fs, args); !ok {
		return code
	}
	m, err := f.buildMatrix(fs.Changed)
	if err != nil {
		return e.errorf("%v", err)
	}
	return benchRun(ctx, e, &f, m)
}

func (f *benchFlags) buildMatrix(changed func(string) bool) (benchrun.Matrix, error) {
	m := benchrun.Default()
	if f.matrix != "" {
		var err error
		if m, err = benchrun.LoadMatrix(f.matrix); err != nil {
			return m, err
		}
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
	if f.tokens != "" {
		toks, err := parseInts(f.tokens)
		if err != nil {
			return m, fmt.Errorf("--tokens: %w", err)
		}
		m.Tokens = toks
	}
	if err := f.enums(&m, changed); err != nil {
		return m, err
	}
	if f.quick {
		m.PerLaunch.MinSamples, m.PerLaunch.TimeLimit = 50, 300*time.Millisecond
		m.Batched.MinSamples, m.Batched.TimeLimit = 5, 300*time.Millisecond
	}
	return m, m.Validate()
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

func benchRun(ctx context.Context, e *env, f *benchFlags, m benchrun.Matrix) int {
	if err := os.MkdirAll(f.out, 0o755); err != nil {
		return e.errorf("make --out folder: %v", err)
	}
	logPath := filepath.Join(f.out, benchrun.LogFile)
	previous, err := previousCells(logPath, f.resume, e)
	if err != nil {
		return e.errorf("%v", err)
	}
	backend, release, err := arena.Choose(f.backend, f.device, []kvpb.Backend{kvpb.Backend_BACKEND_SHM, kvpb.Backend_BACKEND_CUDA})
	if err != nil {
		return e.errorf("%v", err)
	}
	defer release()
	log, err := results.OpenLog(logPath)
	if err != nil {
		return e.errorf("%v", err)
	}
	defer log.Close()
	dir, err := openDir()
	if err != nil {
		return e.errorf("%v", err)
	}
	defer dir.Close()
	r := &benchrun.Runner{Matrix: m, Dir: dir, Backend: backend, OnGPU: backend.Place().OnDevice(), Log: log, Previous: previous,
		Env: benchEnv(), Progress: progressWriter(e)}
	r.PeakGBps = peakGBps(r.OnGPU, f.device)
	r.Start = func(ctx context.Context, name string) (*plugin.Plugin, error) {
		spec, err := plugin.ResolveSpec(name)
		if err != nil {
			return nil, err
		}
		return plugin.StartSpec(ctx, spec, plugin.Options{Dir: dir, CallTimeout: f.timeout, Variant: f.variant})
	}
	if !r.OnGPU && hasGraph(m) {
		fmt.Fprintln(e.stderr, "kvharness: note: graph cells are skipped on the cpu backend (no CUDA graphs)")
	}
	if slices.Contains(m.Caches, results.Cold) && slices.Contains(m.Timings, results.Batched) {
		fmt.Fprintln(e.stderr, "kvharness: note: cold cells are timed per launch only (a batch runs hot after its first launch)")
	}
	fresh, runErr := r.Run(ctx)
	kept, dropped := r.Current(previous)
	if len(dropped) > 0 {
		fmt.Fprintf(e.stderr, "kvharness: warning: %d cells of the earlier run (such as %s) are not in this run's matrix (another plugin version, variant or geometry): left out of the outputs, kept in %s\n",
			len(dropped), dropped[0].Key(), logPath)
	}
	return benchFinish(e, f.out, append(kept, fresh...), runErr)
}

func benchFinish(e *env, out string, cells []results.Cell, runErr error) int {
	if len(cells) > 0 {
		warnings, err := benchrun.WriteOutputs(out, cells)
		for _, w := range warnings {
			fmt.Fprintf(e.stderr, "kvharness: warning: %v\n", w)
		}
		if err != nil {
			return e.errorf("write outputs: %v", err)
		}
		benchrun.WriteTable(e.stdout, cells)
		fmt.Fprintf(e.stdout, "\n%d cells in %s (%s, %s, %s, %s/)\n", len(cells), out, benchrun.LogFile, benchrun.BenchFile, benchrun.TableFile, benchrun.PlotDir)
	}
	if runErr != nil {
		return e.errorf("%v (finished cells are kept in %s; rerun with --resume)", runErr, filepath.Join(out, benchrun.LogFile))
	}
	return exitPass
}

func previousCells(path string, resume bool, e *env) ([]results.Cell, error) {
	if !resume {
		if _, err := os.Stat(path); err == nil {
			return nil, fmt.Errorf("%s exists: pass --resume to continue that run, or choose another --out", path)
		}
		return nil, nil
	}
	l, err := results.ReadLogFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	for _, w := range l.Warnings {
		fmt.Fprintf(e.stderr, "kvharness: warning: %v\n", w)
	}
	return l.Cells, nil
}

func hasGraph(m benchrun.Matrix) bool { return slices.Contains(m.Modes, results.Graph) }

// progressWriter shows progress on a terminal and stays quiet otherwise.
func progressWriter(e *env) *os.File {
	if f, ok := e.stderr.(*os.File); ok && term.IsTerminal(int(f.Fd())) {
		return f
	}
	return nil
}

func benchEnv() results.Env {
	env := results.LocalEnv(time.Now())
	env.Commit = commit()
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
