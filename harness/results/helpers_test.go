package results

import (
	"path/filepath"
	"testing"
	"time"

	goldenfile "github.com/kvharness/kvharness/harness/internal/golden"

	"github.com/kvharness/kvharness/harness/measure"
)

// golden compares got with testdata/name.golden (see package golden).
func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	goldenfile.Check(t, filepath.Join("testdata", name+".golden"), got)
}

// testRuns are the runs of a cell: passes runs of n/passes deterministic
// samples around base ns each (the last run takes the rest).
func testRuns(id Identity, passes, n int, base float64) []Run {
	var runs []Run
	for p := range passes {
		lo, hi := p*n/passes, (p+1)*n/passes
		var samples []float64
		for i := lo; i < hi; i++ {
			samples = append(samples, base+float64((i*7)%11)) // a fixed wobble of 0..10 ns
		}
		runs = append(runs, Run{Schema: RunSchema, Identity: id, Pass: p + 1, Samples: samples,
			Stop: measure.StopReason{Kind: measure.StopConverged, Samples: len(samples)}, Time: time.Date(2026, 11, 30, 2, p, 0, 0, time.UTC)})
	}
	return runs
}

// testQuantiles are the quantiles test cells choose.
var testQuantiles = []float64{0.5, 0.99}

// testCell is a valid, summarized, derived cell of four runs holding n
// deterministic samples around base ns in all.
func testCell(t *testing.T, plugin string, tokens, n int, base float64) Cell {
	t.Helper()
	id := Identity{Plugin: plugin, PluginVersion: "1.2.0", Kernel: "store", Layout: "bf16",
		HeadDim: 128, PageSize: 16, Tokens: tokens, Mode: Graph, Cache: Hot, Timing: PerLaunch, BatchSize: 1}
	c, err := NewCell(testRuns(id, min(4, n), n, base), testQuantiles, measure.Criterion{})
	if err != nil {
		t.Fatal(err)
	}
	c.BytesPerLaunch = int64(tokens) * 2 * 128 * 2 * 2 // K and V, bf16, read + write
	c.PeakGBps, c.CopyGBps = 4800, 450
	c.CopyNs = float64(tokens) * 2 * 128 * 2 * 2 / 450 // the copy's median time
	c.Env = Env{Device: "NVIDIA H200", Driver: "570.86.15", SMClockMHz: 1980, MemClockMHz: 3201,
		Commit: "abc1234", Host: "gpu-07", GoVersion: "go1.26.8", GOOS: "linux", GOARCH: "amd64",
		Time: time.Date(2026, 11, 30, 2, 0, 0, 0, time.UTC)}
	if err := c.Derive(); err != nil {
		t.Fatal(err)
	}
	return c
}
