package results

import (
	"bytes"
	"errors"
	"strconv"
	"strings"
	"testing"

	"golang.org/x/perf/benchunit"
)

func benchCells(t *testing.T) []Cell {
	a := testCell(t, "fusedstore", 4096, 30, 12000)
	b := testCell(t, "scatter", 4096, 30, 15000)
	b.PluginVersion = "0.9.1"
	c := testCell(t, "scatter", 16, 12, 800)
	c.PluginVersion = "0.9.1"
	c.Timing, c.BatchSize = Batched, 64
	c.Samples, c.Runs, c.Schema = nil, nil, "" // a version 1 cell: one line and a warning
	return []Cell{a, b, c}
}

func TestWriteBenchGolden(t *testing.T) {
	var buf bytes.Buffer
	warnings, err := WriteBench(&buf, benchCells(t), BenchOptions{})
	if err != nil {
		t.Fatal(err)
	}
	golden(t, "bench", buf.Bytes())
	if len(warnings) != 1 || !strings.Contains(warnings[0].Error(), "timing=batched@0.9.1: no runs") {
		t.Errorf("warnings = %v, want one about the version 1 cell", warnings)
	}
}

// benchLine is a parsed result line.
type benchLine struct {
	name   string
	iters  int
	values map[string]float64
}

// parseBench splits result lines the way the Go benchmark format defines
// them: name, iterations, then value/unit pairs.
func parseBench(t *testing.T, text string) []benchLine {
	t.Helper()
	var out []benchLine
	for i, line := range strings.Split(text, "\n") {
		if !strings.HasPrefix(line, "Benchmark") {
			continue
		}
		f := strings.Fields(line)
		n, err := strconv.Atoi(f[1])
		if err != nil || len(f)%2 != 0 {
			t.Fatalf("line %d: %q is not name, iterations, value/unit pairs", i+1, line)
		}
		bl := benchLine{name: strings.TrimPrefix(f[0], "Benchmark"), iters: n, values: map[string]float64{}}
		for j := 2; j < len(f); j += 2 {
			v, err := strconv.ParseFloat(f[j], 64)
			if err != nil {
				t.Fatalf("line %d: value %q: %v", i+1, f[j], err)
			}
			bl.values[f[j+1]] = v
		}
		out = append(out, bl)
	}
	return out
}

// TestWriteBenchRuns: one result line per run, its iterations the run's
// launches, ns/op its mean and p50-ns/op its median; a chosen quantile
// only where the run resolves it; rates over the run's median.
func TestWriteBenchRuns(t *testing.T) {
	c := testCell(t, "p", 4096, 440, 1000)  // four runs of 110 samples: a p99 each
	short := testCell(t, "q", 16, 40, 1000) // four runs of 10: no p99
	var buf bytes.Buffer
	if _, err := WriteBench(&buf, []Cell{c, short}, BenchOptions{}); err != nil {
		t.Fatal(err)
	}
	lines := parseBench(t, buf.String())
	if len(lines) != 8 {
		t.Fatalf("%d result lines, want 4 runs × 2 cells", len(lines))
	}
	for i, l := range lines[:4] {
		r := c.Runs[i]
		if l.name != c.Name() || l.iters != r.Summary.N {
			t.Errorf("line %d: %s × %d, want %s × %d", i, l.name, l.iters, c.Name(), r.Summary.N)
		}
		if l.values[UnitTime] != r.Summary.Mean || l.values[UnitP50] != r.Summary.P50 || l.values[UnitP99] != r.Quantiles[1].Ns {
			t.Errorf("line %d: ns/op %v, p50 %v, p99 %v; want the run's mean %v, median %v, p99 %v", i,
				l.values[UnitTime], l.values[UnitP50], l.values[UnitP99], r.Summary.Mean, r.Summary.P50, r.Quantiles[1].Ns)
		}
		wantGB := float64(c.BytesPerLaunch) / r.Summary.P50
		if got := l.values[UnitGBps]; got < wantGB*0.9999 || got > wantGB*1.0001 {
			t.Errorf("line %d: %v GB/s, want %v from its median", i, got, wantGB)
		}
	}
	for i, l := range lines[4:] {
		if _, ok := l.values[UnitP99]; ok {
			t.Errorf("run %d of 10 samples has a p99 (%v): it cannot resolve one", i, l.values[UnitP99])
		}
	}
	if !strings.Contains(buf.String(), LinesKey+": "+LinesRuns+"\n") || !strings.Contains(buf.String(), "Unit p99-ns/op better=lower") {
		t.Errorf("no %s config line or no p99 unit line:\n%s", LinesKey, buf.String())
	}
}

func TestQuantileUnit(t *testing.T) {
	for q, want := range map[float64]string{0.5: "p50-ns/op", 0.99: "p99-ns/op", 0.999: "p99.9-ns/op", 0.2: "p20-ns/op"} {
		if got := QuantileUnit(q); got != want {
			t.Errorf("QuantileUnit(%v) = %q, want %q", q, got, want)
		}
	}
}

// TestBenchUnitsTidy checks with benchunit how benchstat will treat each
// unit: latencies become scaled seconds, GB/s stays decimal GB/s.
func TestBenchUnitsTidy(t *testing.T) {
	for _, tc := range []struct {
		unit, tidied string
		factor       float64
		class        benchunit.Class
	}{
		{UnitTime, "sec/op", 1e-9, benchunit.Decimal},
		{UnitP50, "p50-sec/op", 1e-9, benchunit.Decimal},
		{UnitP99, "p99-sec/op", 1e-9, benchunit.Decimal},
		{UnitP999, "p99.9-sec/op", 1e-9, benchunit.Decimal},
		{UnitGBps, "GB/s", 1, benchunit.Decimal},
		{UnitTokens, "tokens/s", 1, benchunit.Decimal},
		{UnitCopyRatio, "copy-ratio", 1, benchunit.Decimal},
	} {
		v, u := benchunit.Tidy(1, tc.unit)
		if u != tc.tidied || v != tc.factor || benchunit.ClassOf(u) != tc.class {
			t.Errorf("%s tidies to %v %s (%v), want %v %s (%v)", tc.unit, v, u, benchunit.ClassOf(u), tc.factor, tc.tidied, tc.class)
		}
	}
	// The latency is shown scaled, like ns/op: 12.35µ, not 12345.
	v, u := benchunit.Tidy(12345, UnitP99)
	if got := benchunit.Scale(v, benchunit.ClassOf(u)); got != "12.35µ" {
		t.Errorf("12345 p99-ns/op displays as %q, want 12.35µ", got)
	}
}

func TestWriteBenchErrors(t *testing.T) {
	if _, err := WriteBench(&bytes.Buffer{}, nil, BenchOptions{}); !errors.Is(err, ErrNoCells) {
		t.Errorf("no cells: %v, want ErrNoCells", err)
	}
	cells := benchCells(t)
	cells[2].Plugin = "bad plugin"
	var buf bytes.Buffer
	if _, err := WriteBench(&buf, cells, BenchOptions{}); err == nil || buf.Len() != 0 {
		t.Errorf("invalid third cell: err %v, wrote %d bytes; want an error and nothing written", err, buf.Len())
	}
}

func TestWriteBenchWarnsOnSharedName(t *testing.T) {
	a := testCell(t, "p", 16, 40, 1000)
	b := a
	b.PluginVersion = "2.0"
	warnings, err := WriteBench(&bytes.Buffer{}, []Cell{a, b}, BenchOptions{})
	if err != nil || len(warnings) != 1 || !strings.Contains(warnings[0].Error(), "pool their lines") {
		t.Errorf("two versions of one cell: err %v, warnings %v", err, warnings)
	}
}

func TestFormatValue(t *testing.T) {
	for v, want := range map[float64]string{12345.678: "12345.7", 3.3e12: "3300000000000", 1.2345678: "1.23457", 0.5: "0.5"} {
		if got := formatValue(v); got != want {
			t.Errorf("formatValue(%v) = %q, want %q", v, got, want)
		}
	}
}
