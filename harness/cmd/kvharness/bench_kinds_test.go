package main

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/kvharness/kvharness/harness/benchrun"
	"github.com/kvharness/kvharness/harness/results"
	"github.com/kvharness/kvharness/internal/testtier"
)

// TestBenchEveryKind: bench --kernel K measures each kind through the
// one matrix: a table row per kernel cell beside its references, a line
// per run in bench.txt named after the kind, the plots, and a night that
// compare reads. Two page counts, two passes, short stopping rules (the
// runs cut at 60 ms outside the full suite).
func TestBenchEveryKind(t *testing.T) {
	for _, tc := range []struct {
		kernel, plugin string
		extra          []string
		refs           []string // the references measured beside the kind's cells
	}{
		{"load", "layerload", nil, []string{results.KernelCopy}},
		{"transfer", "pdtransfer", nil, []string{results.KernelCopy, results.KernelEmpty}},
		{"read", "fusedstore", []string{"--layout", "bf16", "--slots", "4096"}, []string{results.KernelEmpty}},
		{"pdasync", "pdasync", nil, []string{results.KernelCopy}},
	} {
		t.Run(tc.kernel, func(t *testing.T) {
			if tc.kernel == "read" || tc.kernel == "pdasync" {
				quick(t)
			}
			out := filepath.Join(t.TempDir(), "night")
			args := append([]string{"bench", "--kernel", tc.kernel, "--plugin", tc.plugin, "--tokens", "64,512", "--quick",
				"--backend", "cpu", "--passes", "2", "--out", out}, tc.extra...)
			if !testtier.Full() {
				// A cell that does not converge runs to --quick's time limit
				// (pdasync's, 300 ms a run, four runs and their references);
				// nothing here reads the figures.
				args = append(args, "--max-time", "60ms")
			}
			code, stdout, stderr := runCLI(t, args...)
			if code != exitPass {
				t.Fatalf("bench --kernel %s: exit %d\n%s\n%s", tc.kernel, code, stdout, stderr)
			}
			rows := 0
			for _, line := range strings.Split(stdout, "\n") {
				if strings.HasPrefix(strings.TrimSpace(line), tc.plugin+" ") {
					rows++
				}
			}
			if rows != 2 {
				t.Errorf("the table has %d rows of %s, want 2 (one per batch size):\n%s", rows, tc.plugin, stdout)
			}
			kinds := map[string]int{}
			for _, c := range readCells(t, out) {
				kinds[c.Kernel]++
				if c.Kernel == tc.kernel && (c.GBps <= 0 || len(c.Runs) != 2) {
					t.Errorf("cell %s: %.2f GB/s, %d runs; want GB/s and 2 runs", c.Name(), c.GBps, len(c.Runs))
				}
			}
			if kinds[tc.kernel] != 2 {
				t.Errorf("cells by kernel %v; want 2 of %s", kinds, tc.kernel)
			}
			for _, ref := range tc.refs {
				if kinds[ref] == 0 {
					t.Errorf("cells by kernel %v; want the %s reference beside the %s cells", kinds, ref, tc.kernel)
				}
			}
			bench := readFile(t, filepath.Join(out, benchrun.BenchFile))
			name := "Benchmark" + strings.ToUpper(tc.kernel[:1]) + tc.kernel[1:] + "/plugin=" + tc.plugin + "/"
			if strings.Count(bench, name) != 4 { // two cells, two runs each
				t.Errorf("bench.txt has %d lines of %s, want 4:\n%s", strings.Count(bench, name), name, bench)
			}
			plots, _ := filepath.Glob(filepath.Join(out, benchrun.PlotDir, "throughput_"+tc.plugin+"_*.png"))
			if len(plots) != 1 {
				t.Errorf("throughput plots %v, want one", plots)
			}
			if code, cmpOut, cmpErr := runCLI(t, "compare", filepath.Join(out, benchrun.BenchFile), filepath.Join(out, benchrun.BenchFile)); code != exitPass {
				t.Errorf("compare of the night with itself: exit %d\n%s%s", code, cmpOut, cmpErr)
			}
		})
	}
}

// TestBenchKindRefusals: a kind's bench refuses what it cannot measure,
// naming the setting: tokens that are not whole pages, a rotation, a
// plugin without the kernel, a matrix that makes no cell of it.
func TestBenchKindRefusals(t *testing.T) {
	dir := t.TempDir()
	for name, tc := range map[string]struct {
		args []string
		want string
	}{
		"part page":      {[]string{"--kernel", "load", "--plugin", "layerload", "--tokens", "100"}, "tokens 100: a load moves whole pages"},
		"rotate":         {[]string{"--kernel", "transfer", "--plugin", "pdtransfer", "--tokens", "64", "--rotate", "2"}, "rotate 2: a transfer benches take one data set"},
		"no such":        {[]string{"--kernel", "load", "--plugin", "pdtransfer", "--tokens", "64"}, "plugin pdtransfer has no load kernel"},
		"no cell":        {[]string{"--kernel", "load", "--plugin", "layerload", "--tokens", "64", "--timing", "batched"}, "make no load cell"},
		"unknown kernel": {[]string{"--kernel", "compress", "--plugin", "layerload"}, "--kernel compress"},
	} {
		t.Run(name, func(t *testing.T) {
			args := append(append([]string{"bench", "--quick", "--backend", "cpu", "--passes", "1"}, tc.args...), "--out", filepath.Join(dir, strings.ReplaceAll(name, " ", "-")))
			code, _, stderr := runCLI(t, args...)
			if code != exitError || !strings.Contains(stderr, tc.want) || strings.Count(stderr, "\n") != 1 {
				t.Errorf("exit %d, stderr %q; want exit 2 and one line saying %q", code, stderr, tc.want)
			}
		})
	}
}
