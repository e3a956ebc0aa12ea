package compare

import (
	"bytes"
	"flag"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/kvharness/kvharness/harness/measure"
	"github.com/kvharness/kvharness/harness/results"
)

var update = flag.Bool("update", false, "rewrite testdata/*.golden from the current output")

func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", name+".golden")
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -update to create it)", err)
	}
	if !bytes.Equal(got, want) {
		gotPath := filepath.Join("testdata", name+".got")
		os.WriteFile(gotPath, got, 0o644)
		t.Errorf("output differs from %s; wrote %s (diff -u %s %s; go test -update to accept)", path, gotPath, path, gotPath)
	}
}

// cell is a store cell of n samples around 10 µs × scale with 1% normal
// noise, drawn from seed.
func cell(t *testing.T, plugin string, tokens, n int, scale float64, seed uint64) results.Cell {
	t.Helper()
	rng := rand.New(rand.NewPCG(seed, 7))
	samples := make([]float64, n)
	for i := range samples {
		samples[i] = 10_000 * scale * (1 + 0.01*rng.NormFloat64())
	}
	sum, err := measure.Summarize(samples)
	if err != nil {
		t.Fatal(err)
	}
	c := results.Cell{
		Identity: results.Identity{Plugin: plugin, PluginVersion: "1.0", Kernel: "store", Layout: "bf16",
			HeadDim: 128, PageSize: 16, Tokens: tokens, Mode: results.Graph, Cache: results.Hot,
			Timing: results.PerLaunch, BatchSize: 1},
		Summary: sum, BytesPerLaunch: int64(tokens) * 1024, CopyGBps: 600, CopyNs: float64(tokens) * 1024 / 600,
		Env:     results.Env{Device: "NVIDIA H200", Driver: "570.86.15", Commit: "c" + plugin, GOOS: "linux", GOARCH: "amd64", Time: time.Unix(0, 0).UTC()},
		Samples: samples,
	}
	if err := c.Derive(); err != nil {
		t.Fatal(err)
	}
	return c
}

// benchText is cells in the Go benchmark format, lines result lines per
// cell.
func benchText(t *testing.T, lines int, cells ...results.Cell) []byte {
	t.Helper()
	var buf bytes.Buffer
	if _, err := results.WriteBench(&buf, cells, results.BenchOptions{Lines: lines}); err != nil {
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

// rowsFor returns the rows of benchmark name, by unit.
func rowsFor(r *Report, name string) map[string]Row {
	out := map[string]Row{}
	for _, row := range r.Rows {
		if row.Name == name {
			out[row.Unit] = row
		}
	}
	return out
}
