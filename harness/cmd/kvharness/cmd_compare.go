package main

import (
	"context"
	"fmt"

	"github.com/kvharness/kvharness/harness/compare"
)

func init() {
	register("compare", "compare two bench.txt files; exit 1 on a significant regression", runCompare)
}

const compareExamples = `  kvharness compare bench/baselines/cpu.txt night/bench.txt
  kvharness compare --threshold 0.10 --alpha 0.01 base.txt new.txt
  kvharness compare --ignore variant base.txt slowed/bench.txt
  kvharness compare --confirm rerun/bench.txt bench/baselines/gpu.txt night/bench.txt
`

func runCompare(_ context.Context, e *env, args []string) int {
	fs := flags("compare", "BASE NEW [flags]", compareExamples, e)
	o := compare.Options{}
	fs.Float64Var(&o.Alpha, "alpha", compare.DefaultAlpha, "significance level of the Mann–Whitney U-test")
	fs.Float64Var(&o.Threshold, "threshold", compare.DefaultThreshold, "smallest relative change that counts as a regression (0.05 = 5%)")
	fs.Float64Var(&o.LatencyThreshold, "latency-threshold", compare.DefaultLatencyThreshold, "--threshold for per-launch kernel rows judged against a floor (not with --absolute): their times include the host's wait and move more between runs")
	fs.BoolVar(&o.Absolute, "absolute", false, "judge each row's own change; by default a kernel's change is judged net of the drift of the floor measured beside it (empty launch or copy)")
	var rerun string
	fs.StringVar(&rerun, "confirm", "", "a second run of NEW's code: a regression counts only when this run shows it too (bench/nightly.sh reruns the matrix when the first compare fails)")
	fs.StringSliceVar(&o.Ignore, "ignore", nil, "benchmark name keys to drop before matching rows (e.g. variant: compare a variant with the plugin's baseline)")
	if code, ok := parse(fs, args); !ok {
		return code
	}
	if fs.NArg() != 2 {
		return e.errorf("compare takes two files, BASE and NEW; got %d", fs.NArg())
	}
	if o.Alpha <= 0 || o.Alpha >= 1 || o.Threshold < 0 {
		return e.errorf("--alpha must be in (0,1) and --threshold non-negative")
	}
	r, err := compare.CompareFiles(fs.Arg(0), fs.Arg(1), o)
	if err != nil {
		return e.errorf("%v", err)
	}
	if rerun != "" {
		again, err := compare.CompareFiles(fs.Arg(0), rerun, o)
		if err != nil {
			return e.errorf("--confirm: %v", err)
		}
		r.Confirm(again)
	}
	if err := compare.WriteText(e.stdout, r); err != nil {
		return e.errorf("%v", err)
	}
	// A night that shares no benchmark with its baseline judged nothing:
	// passing it would hide a renamed matrix (another variant, rotate,
	// slot_run or geometry) from the nightly job.
	if r.Compared() == 0 {
		return e.errorf("no benchmark of %s is in %s: the runs measured different cells (another variant, rotate, slot_run, layout or geometry); compare runs of the same matrix, or add --ignore variant to compare a variant with its plugin", fs.Arg(1), fs.Arg(0))
	}
	if n := r.Count(compare.Missing); n > 0 {
		fmt.Fprintf(e.stderr, "kvharness: warning: %d rows are in one file only (verdict missing); they were not judged\n", n)
	}
	if n := len(r.Regressions()); n > 0 {
		confirmed := ""
		if rerun != "" {
			confirmed = ", confirmed by the rerun"
		}
		fmt.Fprintf(e.stderr, "kvharness: %d significant regression(s) beyond %.0f%%%s\n", n, 100*o.Threshold, confirmed)
		return exitViolation
	}
	return exitPass
}
