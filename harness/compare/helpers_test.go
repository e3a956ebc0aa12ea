package compare

import (
	"bytes"
	"math/rand/v2"
	"path/filepath"
	"testing"
	"time"

	goldenfile "github.com/kvharness/kvharness/harness/internal/golden"

	"github.com/kvharness/kvharness/harness/measure"
	"github.com/kvharness/kvharness/harness/results"
)

// golden compares got with testdata/name.golden (see package golden).
func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	goldenfile.Check(t, filepath.Join("testdata", name+".golden"), got)
}

// cell is a batched store cell of runs runs of n samples each around 10 µs ×
// scale, with 1% normal noise per sample and 1% per run (a run's own
// offset, as a pass's plugin process has), drawn from seed.
func cell(t *testing.T, plugin string, tokens, runs, n int, scale float64, seed uint64) results.Cell {
	t.Helper()
	rng := rand.New(rand.NewPCG(seed, 7))
	id := results.Identity{Plugin: plugin, PluginVersion: "1.0", Kernel: "store", Layout: "bf16",
		HeadDim: 128, PageSize: 16, Tokens: tokens, Mode: results.Graph, Cache: results.Hot,
		Timing: results.Batched, BatchSize: 1}
	var rs []results.Run
	for p := range runs {
		offset := 1 + 0.01*rng.NormFloat64()
		samples := make([]float64, n)
		for i := range samples {
			samples[i] = 10_000 * scale * offset * (1 + 0.01*rng.NormFloat64())
		}
		rs = append(rs, results.Run{Schema: results.RunSchema, Identity: id, Pass: p + 1, Samples: samples,
			Stop: measure.StopReason{Kind: measure.StopConverged, Samples: n}})
	}
	c, err := results.NewCell(rs, []float64{0.5, 0.99}, measure.Criterion{})
	if err != nil {
		t.Fatal(err)
	}
	c.BytesPerLaunch, c.CopyGBps, c.CopyNs = int64(tokens)*1024, 600, float64(tokens)*1024/600
	c.Env = results.Env{Device: "NVIDIA H200", Driver: "570.86.15", Commit: "c" + plugin, GOOS: "linux", GOARCH: "amd64", Time: time.Unix(0, 0).UTC()}
	if err := c.Derive(); err != nil {
		t.Fatal(err)
	}
	return c
}

// benchText is cells in the Go benchmark format: a line per run.
func benchText(t *testing.T, cells ...results.Cell) []byte {
	t.Helper()
	var buf bytes.Buffer
	if _, err := results.WriteBench(&buf, cells, results.BenchOptions{}); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func compareText(t *testing.T, base, next []byte) *Report {
	t.Helper()
	r, err := Compare("base.txt", bytes.NewReader(base), "new.txt", bytes.NewReader(next), Options{})
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// cellFor returns the cell of benchmark name.
func cellFor(t *testing.T, r *Report, name string) Cell {
	t.Helper()
	for _, c := range r.Cells {
		if c.Name == name {
			return c
		}
	}
	t.Fatalf("no cell %s in the report", name)
	return Cell{}
}

// evidenceFor returns a cell's evidence by unit.
func evidenceFor(c Cell) map[string]Row {
	out := map[string]Row{}
	for _, r := range c.Evidence {
		out[r.Unit] = r
	}
	return out
}
