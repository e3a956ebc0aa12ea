package main

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/kvharness/kvharness/harness/kernels"
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
