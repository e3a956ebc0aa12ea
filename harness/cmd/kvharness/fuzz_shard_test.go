package main

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/kvharness/kvharness/harness/kernels"
	"github.com/kvharness/kvharness/harness/plugin"
)

// TestFuzzShardsSplitTheTargets: n shards of --target all fuzz every
// kind's target exactly once between them, each its part of the sorted
// list; a shard that owns none, a bad shard and a bad target list are
// one-line errors before anything runs.
func TestFuzzShardsSplitTheTargets(t *testing.T) {
	all := slices.Sorted(slices.Values(kernels.FuzzTargetNames()))
	for n := 1; n <= len(all); n++ {
		var union []string
		for i := 1; i <= n; i++ {
			got, err := fuzzTargets("all", fmt.Sprintf("%d/%d", i, n))
			if err != nil {
				t.Fatalf("shard %d/%d: %v", i, n, err)
			}
			union = append(union, got...)
		}
		slices.Sort(union)
		if !slices.Equal(union, all) {
			t.Errorf("%d shards fuzz %v between them; want each of %v once", n, union, all)
		}
	}
	if got, err := fuzzTargets("FuzzRead, FuzzStore", "2/2"); err != nil || !slices.Equal(got, []string{"FuzzStore"}) {
		t.Errorf("shard 2/2 of FuzzRead,FuzzStore = %v, %v; want FuzzStore", got, err)
	}
	for _, tc := range []struct{ target, shard, says string }{
		{"FuzzStore", "2/2", "--shard 2/2 owns none of the 1 targets"},
		{"all", "4/3", "--shard 4/3"},
		{"FuzzStore,,FuzzRead", "", `--target "FuzzStore,,FuzzRead": want fuzz targets`},
		{"FuzzStore,FuzzStore", "", "FuzzStore"},
	} {
		code, _, errOut := runCLI(t, "fuzz", "--target", tc.target, "--shard", tc.shard)
		if code != exitError || !strings.Contains(errOut, tc.says) || strings.Count(errOut, "\n") != 1 {
			t.Errorf("fuzz --target %s --shard %s: exit %d, stderr %q; want exit %d and one line saying %q", tc.target, tc.shard, code, errOut, exitError, tc.says)
		}
	}
}

// TestFuzzRunsTheLane: out of process, a kind's target runs in its fuzz
// folder (the out-of-process lane), and that folder holds the target; in
// process it runs in the kind's package, where the kernel can be linked;
// a file parser's target runs in package fuzz.
func TestFuzzRunsTheLane(t *testing.T) {
	root, ok := plugin.SourceRoot()
	if !ok {
		t.Skip("not inside the kvharness source tree")
	}
	for _, k := range kernels.All {
		lane := fuzzPackage(k.Fuzz.Name, "out-of-process")
		if want := filepath.FromSlash(k.Fuzz.Package + "/fuzz"); lane != want {
			t.Errorf("%s out of process runs in %s, want %s", k.Fuzz.Name, lane, want)
		}
		src, err := os.ReadFile(filepath.Join(root, lane, "fuzz_test.go"))
		if err != nil || !strings.Contains(string(src), "func "+k.Fuzz.Name+"(f *testing.F)") {
			t.Errorf("%s: its lane %s holds no such target (%v)", k.Fuzz.Name, lane, err)
		}
		if got, want := fuzzPackage(k.Fuzz.Name, "in-process"), filepath.FromSlash(k.Fuzz.Package); got != want {
			t.Errorf("%s in process runs in %s, want %s", k.Fuzz.Name, got, want)
		}
	}
	if got := fuzzPackage("FuzzReproFile", "out-of-process"); got != "fuzz" {
		t.Errorf("FuzzReproFile runs in %s, want fuzz", got)
	}
}
