package compare

import (
	"bytes"
	"testing"

	"github.com/kvharness/kvharness/harness/results"
	"golang.org/x/perf/benchfmt"
	"golang.org/x/perf/benchunit"
)

// TestWriteBenchParses reads results.WriteBench output with benchfmt:
// every line parses, every unit tidies as documented, and the Unit lines
// give every unit its direction.
func TestWriteBenchParses(t *testing.T) {
	c := cell(t, "a", 4096, 6, 120, 1, 1)
	r := benchfmt.NewReader(bytes.NewReader(benchText(t, c)), "bench.txt")
	n := 0
	for r.Scan() {
		switch rec := r.Result().(type) {
		case *benchfmt.SyntaxError:
			t.Fatalf("WriteBench output does not parse: %v", rec)
		case *benchfmt.Result:
			n++
			checkResult(t, rec, c)
		}
	}
	if n != 6 {
		t.Errorf("read %d results, want one per run, 6", n)
	}
	for _, u := range results.BenchUnits {
		if got := r.Units().GetBetter(u.Name); got != u.Better {
			t.Errorf("unit %s: GetBetter = %d, want %d", u.Name, got, u.Better)
		}
	}
}

func checkResult(t *testing.T, res *benchfmt.Result, c results.Cell) {
	t.Helper()
	if string(res.Name) != c.Name() || res.GetConfig("gpu") != "NVIDIA H200" {
		t.Errorf("result %q with gpu %q, want %q on NVIDIA H200", res.Name, res.GetConfig("gpu"), c.Name())
	}
	units := []string{results.UnitTime, results.UnitP50, results.UnitP99, results.UnitGBps, results.UnitTokens, results.UnitCopyRatio}
	if len(res.Values) != len(units) {
		t.Fatalf("result has %d values, want %d", len(res.Values), len(units))
	}
	for i, name := range units {
		u := results.BenchUnit{Name: name}
		v := res.Values[i]
		factor, tidy := benchunit.Tidy(1, u.Name)
		if v.Unit != tidy || v.OrigUnit != "" && v.OrigUnit != u.Name || v.Value == 0 {
			t.Errorf("value %d: %v %s (orig %q), want unit %s", i, v.Value, v.Unit, v.OrigUnit, tidy)
		}
		if factor != 1 && v.Value != v.OrigValue*factor {
			t.Errorf("%s: tidied %v, want %v × %v", u.Name, v.Value, v.OrigValue, factor)
		}
	}
}
