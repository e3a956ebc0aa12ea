package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/kvharness/kvharness/harness/compare"
	"github.com/kvharness/kvharness/harness/plot"
	"github.com/kvharness/kvharness/harness/results"
)

const compareExamples = `  kvharness compare bench/baselines/cpu.txt night/bench.txt
  kvharness compare --strict --format md --plots night/overlay bench/baselines/cpu.txt night/bench.txt
  kvharness compare --filter '/plugin:fusedstore /timing:batched' --only-regressions base.txt new.txt
  kvharness compare --ignore variant base.txt slowed/bench.txt
  kvharness compare --confirm rerun/bench.txt bench/baselines/gpu.txt night/bench.txt
`

type compareFlags struct {
	o            compare.Options
	rerun, plots string
	format       string
	only, strict bool
}

func runCompare(_ context.Context, e *env, args []string) int {
	fs := flags("compare", "BASE NEW [flags]", compareExamples, e)
	var f compareFlags
	fs.Float64Var(&f.o.Alpha, "alpha", compare.DefaultAlpha, "significance level of the Mann–Whitney U-test over runs")
	fs.Float64Var(&f.o.Threshold, "threshold", compare.DefaultThreshold, "smallest relative change that makes a cell slower or faster (0.05 = 5%)")
	fs.Float64Var(&f.o.LatencyThreshold, "latency-threshold", compare.DefaultLatencyThreshold, "--threshold for per-launch cells: their times include the host's wait and move more between nights")
	fs.StringVar(&f.o.Metric, "metric", compare.DefaultMetric, "the unit a cell is judged on (tidied, as benchstat shows it: p50-sec/op, sec/op for the mean, p99-sec/op...)")
	fs.StringVar(&f.o.Filter, "filter", "", "benchstat filter of the cells to compare, such as '/plugin:fusedstore -/timing:per-launch'")
	fs.BoolVar(&f.o.Absolute, "absolute", false, "judge each cell's own change; by default a kernel's change is judged net of the drift of the floor measured beside it (empty launch or copy)")
	fs.BoolVar(&f.o.Apart, "apart", false, "also require the medians' confidence intervals to be disjoint (with eight runs or fewer a side: every run of one night slower than every run of the other)")
	fs.BoolVar(&f.o.AllowConfigDiff, "allow-config-diff", false, "compare files from different devices or configurations (gpu, cpu, clocks, goos, goarch) instead of refusing")
	fs.StringVar(&f.rerun, "confirm", "", "a second run of NEW's code: a cell is slower only when this run finds it slower too (bench/nightly.sh reruns the matrix when the first compare fails)")
	fs.StringSliceVar(&f.o.Ignore, "ignore", nil, "benchmark name keys to drop before matching cells (e.g. variant: compare a variant with the plugin's baseline)")
	fs.StringVar(&f.format, "format", "text", "report format: text, md (a pull request comment), csv or json")
	fs.BoolVar(&f.only, "only-regressions", false, "list only the slower cells (the counts still cover all)")
	fs.BoolVar(&f.strict, "strict", false, "exit 2 when a cell lacks the runs to be judged or a cell of BASE is missing from NEW (a nightly gate)")
	fs.StringVar(&f.plots, "plots", "", "folder for overlay plots of the two nights, one per layout, slower cells ringed")
	if code, ok := parse(fs, args); !ok {
		return code
	}
	if fs.NArg() != 2 {
		return e.errorf("compare takes two files, BASE and NEW; got %d", fs.NArg())
	}
	return compareRun(e, &f, fs.Arg(0), fs.Arg(1))
}

func compareRun(e *env, f *compareFlags, base, next string) int {
	format, err := compare.ParseFormat(f.format)
	if err != nil {
		return e.errorf("%v", err)
	}
	if f.o.Alpha <= 0 || f.o.Alpha >= 1 || f.o.Threshold < 0 || f.o.LatencyThreshold < 0 {
		return e.errorf("--alpha must be in (0,1), --threshold and --latency-threshold non-negative")
	}
	r, err := compare.CompareFiles(base, next, f.o)
	if err != nil {
		return e.errorf("%v", err)
	}
	if f.rerun != "" {
		again, err := compare.CompareFiles(base, f.rerun, f.o)
		if err != nil {
			return e.errorf("--confirm: %v", err)
		}
		r.Confirm(again)
	}
	if err := compare.Write(e.stdout, r, compare.WriteOptions{Format: format, OnlySlower: f.only}); err != nil {
		return e.errorf("%v", err)
	}
	if f.plots != "" {
		if err := overlayPlots(f.plots, r); err != nil {
			return e.errorf("--plots: %v", err)
		}
	}
	return compareVerdict(e, f, r, base, next)
}

// compareVerdict is the exit status: an error when nothing was judged or,
// under --strict, when a cell lacks data; 1 when a cell is slower.
func compareVerdict(e *env, f *compareFlags, r *compare.Report, base, next string) int {
	// A night that shares no benchmark with its baseline judged nothing:
	// passing it would hide a renamed matrix (another variant, rotate,
	// slot_run or geometry) from the nightly job.
	if r.Compared() == 0 {
		return e.errorf("no benchmark of %s is in %s: the runs measured different cells (another variant, rotate, slot_run, layout or geometry); compare runs of the same matrix, or add --ignore variant to compare a variant with its plugin", next, base)
	}
	if lack := r.Lacking(); len(lack) > 0 {
		c := lack[0]
		what := c.Lacks
		if what == "" {
			what = "missing from " + next
		}
		msg := fmt.Sprintf("%d cells cannot be judged, such as %s: %s", len(lack), c.Name, what)
		if f.strict {
			return e.errorf("--strict: %s", msg)
		}
		fmt.Fprintf(e.stderr, "kvharness: warning: %s\n", msg)
	}
	if n := len(r.Slower()); n > 0 {
		confirmed := ""
		if f.rerun != "" {
			confirmed = ", confirmed by the rerun"
		}
		fmt.Fprintf(e.stderr, "kvharness: %d cells slower past %.0f%%%s\n", n, 100*f.o.Threshold, confirmed)
		return exitViolation
	}
	return exitPass
}

// overlayPlots draws, per layout, the two nights' store cells against
// tokens, slower cells ringed.
func overlayPlots(dir string, r *compare.Report) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	var layouts []string
	pairs := map[string][]plot.Pair{}
	for _, c := range r.Cells {
		fields := c.Fields()
		tokens, err := strconv.Atoi(fields["tokens"])
		if c.Kind() != "Store" || err != nil || !strings.HasSuffix(c.Unit, "sec/op") {
			continue
		}
		l := fields["layout"]
		if _, ok := pairs[l]; !ok {
			layouts = append(layouts, l)
		}
		pairs[l] = append(pairs[l], plot.Pair{Series: seriesName(c.Name), Tokens: tokens, Base: 1e9 * c.Old.Center, New: 1e9 * c.New.Center, Mark: mark(c.Verdict)})
	}
	for _, l := range layouts {
		o := plot.Options{Title: "store time per launch, two nights: " + l, Footer: overlayFooter(r)}
		path := filepath.Join(dir, "overlay_"+l+".png")
		if err := results.WriteFileAtomic(path, 0o644, func(w io.Writer) error {
			return plot.Overlay(w, pairs[l], nightName(r.Base, r.Config[0]), nightName(r.New, r.Config[1]), o)
		}); err != nil {
			return err
		}
	}
	return nil
}

// seriesName is a store cell's name fields but layout and tokens.
func seriesName(name string) string {
	var parts []string
	for _, p := range strings.Split(name, "/")[1:] {
		if k, _, _ := strings.Cut(p, "="); k != "layout" && k != "tokens" && k != "head_dim" && k != "page_size" {
			parts = append(parts, p)
		}
	}
	return strings.Join(parts, " ")
}

func mark(v compare.Verdict) plot.Mark {
	switch v {
	case compare.Slower:
		return plot.Slower
	case compare.Faster:
		return plot.Faster
	case compare.Unsure:
		return plot.Unsure
	}
	return plot.Same
}

// nightName is a night as a plot names it: its file's folder and name,
// commit and date.
func nightName(file string, config map[string]string) string {
	parts := []string{filepath.Join(filepath.Base(filepath.Dir(file)), filepath.Base(file))}
	return strings.Join(append(parts, nightStamp(config)...), " ")
}

func nightStamp(config map[string]string) []string {
	var out []string
	for _, k := range []string{"commit", "date"} {
		if v := config[k]; v != "" {
			out = append(out, v)
		}
	}
	return out
}

func overlayFooter(r *compare.Report) string {
	dev := r.Config[1]["gpu"]
	if cpu := r.Config[1]["cpu"]; dev == "cpu" || dev == "" {
		dev = "cpu " + cpu
	}
	return fmt.Sprintf("base %s vs new %s; device %s; judged on %s",
		strings.Join(nightStamp(r.Config[0]), " "), strings.Join(nightStamp(r.Config[1]), " "), dev, r.Options.Metric)
}
