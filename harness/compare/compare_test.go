package compare

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/perf/benchfmt"

	"github.com/kvharness/kvharness/harness/results"
)

// wantVerdicts checks the verdict of every unit of one benchmark.
func wantVerdicts(t *testing.T, r *Report, name string, want map[string]Verdict) {
	t.Helper()
	rows := rowsFor(r, name)
	if len(rows) != len(want) {
		t.Errorf("%s has %d rows, want %d", name, len(rows), len(want))
	}
	for unit, v := range want {
		if got := rows[unit]; got.Verdict != v {
			t.Errorf("%s %s: verdict %q (delta %+.2f%%, p=%.4f, n=%d+%d), want %q", name, unit, got.Verdict, got.DeltaPct, got.P, got.Old.N, got.New.N, v)
		}
	}
}

// all expects v on every judged unit; the copy ratio has no direction, so
// a significant change in it is reported as changed, never judged.
func all(v Verdict) map[string]Verdict {
	ratio := v
	if v == Regression || v == Improvement {
		ratio = Changed
	}
	return map[string]Verdict{"sec/op": v, "p50-sec/op": v, "p99-sec/op": v, "p99.9-sec/op": v, "GB/s": v, "tokens/s": v, "copy-ratio": ratio}
}

func TestSlowedTwentyPercentIsRegression(t *testing.T) {
	base := cell(t, "a", 4096, 200, 1.0, 1)
	slow := cell(t, "a", 4096, 200, 1.2, 2)
	r := compareText(t, benchText(t, 10, base), benchText(t, 10, slow))
	wantVerdicts(t, r, base.Name(), all(Regression))
	row := rowsFor(r, base.Name())["sec/op"]
	if row.DeltaPct < 17 || row.DeltaPct > 23 || row.P >= 0.001 || row.Old.N != 10 || row.New.N != 10 {
		t.Errorf("sec/op row: delta %+.2f%%, p %v, n %d+%d; want about +20%%, p < 0.001, 10+10", row.DeltaPct, row.P, row.Old.N, row.New.N)
	}
	if rowsFor(r, base.Name())["GB/s"].DeltaPct > -14 {
		t.Errorf("GB/s should fall about 17%% when time rises 20%%")
	}
	if len(r.Regressions()) != 6 {
		t.Errorf("Regressions() = %d rows, want 6 (every unit but the copy ratio)", len(r.Regressions()))
	}
}

// A baseline written while copy-ratio still carried "better=lower" must
// not make a copy-ratio change a regression: the units WriteBench emits
// are judged as results.BenchUnits says.
func TestOldBaselineUnitLineDoesNotJudgeCopyRatio(t *testing.T) {
	base := cell(t, "a", 4096, 200, 1.0, 1)
	slow := cell(t, "a", 4096, 200, 1.2, 2)
	old := append([]byte("Unit copy-ratio better=lower\n"), benchText(t, 10, base)...)
	r := compareText(t, old, benchText(t, 10, slow))
	if v := rowsFor(r, base.Name())["copy-ratio"].Verdict; v != Changed {
		t.Errorf("copy-ratio verdict %q under an old baseline's unit line, want %q", v, Changed)
	}
	if len(r.Regressions()) != 6 {
		t.Errorf("Regressions() = %d rows, want 6 (every unit but the copy ratio)", len(r.Regressions()))
	}
}

func TestSpedUpIsImprovement(t *testing.T) {
	base := cell(t, "a", 4096, 200, 1.0, 1)
	fast := cell(t, "a", 4096, 200, 0.8, 2)
	r := compareText(t, benchText(t, 10, base), benchText(t, 10, fast))
	wantVerdicts(t, r, base.Name(), all(Improvement))
	if len(r.Regressions()) != 0 {
		t.Errorf("an improvement reported regressions: %v", r.Regressions())
	}
}

func TestNoisyRerunPasses(t *testing.T) {
	for seed := uint64(10); seed < 20; seed++ {
		a := cell(t, "a", 4096, 200, 1.0, seed)
		b := cell(t, "a", 4096, 200, 1.0, seed+100)
		r := compareText(t, benchText(t, 10, a), benchText(t, 10, b))
		if n := len(r.Regressions()); n != 0 || r.Count(Unchanged) != 7 {
			t.Errorf("seed %d: rerun of the same distribution: %d regressions, %d unchanged of %d rows", seed, n, r.Count(Unchanged), len(r.Rows))
		}
	}
}

func TestSmallSignificantChangeUnderThreshold(t *testing.T) {
	base := cell(t, "a", 4096, 400, 1.0, 1)
	slower := cell(t, "a", 4096, 400, 1.03, 2) // 3% slower, 1% noise: significant
	r := compareText(t, benchText(t, 10, base), benchText(t, 10, slower))
	row := rowsFor(r, base.Name())["sec/op"]
	if row.P >= 0.05 || row.Verdict != Unchanged {
		t.Errorf("3%% slower: p %v, verdict %q; want significant but unchanged (under 5%%)", row.P, row.Verdict)
	}
	r, err := Compare("b", bytes.NewReader(benchText(t, 10, base)), "n", bytes.NewReader(benchText(t, 10, slower)), Options{Threshold: 0.01})
	if err != nil {
		t.Fatal(err)
	}
	if v := rowsFor(r, base.Name())["sec/op"].Verdict; v != Regression {
		t.Errorf("3%% slower with a 1%% threshold: %q, want regression", v)
	}
}

func TestTooFewSamplesIsNotRegression(t *testing.T) {
	base := cell(t, "a", 4096, 3, 1.0, 1)
	slow := cell(t, "a", 4096, 3, 1.2, 2)
	r := compareText(t, benchText(t, 10, base), benchText(t, 10, slow)) // 3 samples: 3 lines
	wantVerdicts(t, r, base.Name(), all(Insufficient))
	row := rowsFor(r, base.Name())["sec/op"]
	if !strings.Contains(fmt.Sprint(row.Warnings), "too few values for a U-test to reach p < 0.05: 3 and 3") {
		t.Errorf("warnings = %v, want one saying 3 and 3 values are too few", row.Warnings)
	}
	if len(r.Regressions()) != 0 {
		t.Error("too few samples reported as a regression")
	}
}

func TestMissingRow(t *testing.T) {
	a, b := cell(t, "a", 16, 50, 1, 1), cell(t, "b", 16, 50, 1, 2)
	r := compareText(t, benchText(t, 10, a, b), benchText(t, 10, a))
	wantVerdicts(t, r, b.Name(), all(Missing))
	if row := rowsFor(r, b.Name())["sec/op"]; row.Old.N != 10 || row.New.N != 0 {
		t.Errorf("missing row sides n=%d+%d, want 10+0", row.Old.N, row.New.N)
	}
}

func TestUnknownUnitDirection(t *testing.T) {
	base := "BenchmarkX 1 10 widgets\nBenchmarkX 1 11 widgets\nBenchmarkX 1 10 widgets\nBenchmarkX 1 9 widgets\nBenchmarkX 1 10 widgets\n"
	next := strings.ReplaceAll(base, " widgets", "0 widgets") // ten times more
	r := compareText(t, []byte(base), []byte(next))
	if len(r.Rows) != 1 || r.Rows[0].Verdict != Changed || r.Rows[0].Better != 0 {
		t.Errorf("rows = %+v, want one changed row of unknown direction", r.Rows)
	}
}

func TestUnitMetadataSetsDirection(t *testing.T) {
	base := "Unit widgets better=higher\nBenchmarkX 1 10 widgets\nBenchmarkX 1 11 widgets\nBenchmarkX 1 10 widgets\nBenchmarkX 1 9 widgets\n"
	next := strings.ReplaceAll(strings.ReplaceAll(base, "1 1", "1 "), "1 9", "1 0") // drops from ~10 to ~1
	r := compareText(t, []byte(base), []byte(next))
	if r.Rows[0].Better != 1 || r.Rows[0].Verdict != Regression {
		t.Errorf("widgets better=higher falling: better %d, verdict %q; want +1, regression", r.Rows[0].Better, r.Rows[0].Verdict)
	}
}

func TestConfigWarnings(t *testing.T) {
	a := cell(t, "a", 16, 50, 1, 1)
	b := cell(t, "a", 16, 50, 1, 2)
	b.Env.Device = "NVIDIA H100"
	b.Env.Commit = "other" // expected to change: no warning
	r := compareText(t, benchText(t, 10, a), benchText(t, 10, b))
	if len(r.Warnings) != 1 || !strings.Contains(r.Warnings[0].Error(), `config gpu differs: "NVIDIA H200" in base.txt, "NVIDIA H100" in new.txt`) {
		t.Errorf("warnings = %v, want one about the gpu only", r.Warnings)
	}
}

func TestMalformedFiles(t *testing.T) {
	good := benchText(t, 10, cell(t, "a", 16, 50, 1, 1))
	for _, tc := range []struct{ file, wantPos string }{
		{"malformed.txt", "malformed.txt:4: "},
		{"truncated.txt", "truncated.txt:3: "},
	} {
		path := filepath.Join("testdata", tc.file)
		data, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		_, err = Compare(tc.file, bytes.NewReader(data), "new.txt", bytes.NewReader(good), Options{})
		var se *benchfmt.SyntaxError
		if !errors.As(err, &se) || !strings.HasPrefix(err.Error(), tc.wantPos) {
			t.Errorf("%s: error %v, want a SyntaxError starting %q", tc.file, err, tc.wantPos)
		}
	}
}

func TestTruncatedWrittenFile(t *testing.T) {
	data := benchText(t, 10, cell(t, "a", 16, 50, 1, 1))
	cut := data[:len(data)-20] // killed mid-line
	lines := bytes.Count(cut, []byte{'\n'}) + 1
	_, err := Compare("new.txt", bytes.NewReader(cut), "x", bytes.NewReader(data), Options{})
	var se *benchfmt.SyntaxError
	if !errors.As(err, &se) || se.Line != lines || !strings.Contains(err.Error(), "truncated") {
		t.Errorf("truncated file: %v, want a SyntaxError at line %d saying truncated", err, lines)
	}
}

func TestNoResults(t *testing.T) {
	_, err := Compare("empty.txt", strings.NewReader("goos: linux\n"), "x", strings.NewReader(""), Options{})
	if !errors.Is(err, ErrNoResults) || !strings.HasPrefix(err.Error(), "empty.txt: ") {
		t.Errorf("file without results: %v, want ErrNoResults naming empty.txt", err)
	}
}

func TestCompareFilesMissing(t *testing.T) {
	_, err := CompareFiles(filepath.Join(t.TempDir(), "none.txt"), "x", Options{})
	if !errors.Is(err, os.ErrNotExist) || !strings.Contains(err.Error(), "base file") {
		t.Errorf("missing base: %v", err)
	}
}

func TestMinUTestP(t *testing.T) {
	for _, tc := range []struct {
		n1, n2 int
		want   float64
	}{{1, 1, 1}, {3, 3, 0.1}, {4, 4, 2.0 / 70}, {3, 10, 2.0 / 286}, {10, 10, 2.0 / 184756}} {
		if got := minUTestP(tc.n1, tc.n2); got < tc.want*(1-1e-12) || got > tc.want*(1+1e-12) {
			t.Errorf("minUTestP(%d, %d) = %v, want %v", tc.n1, tc.n2, got, tc.want)
		}
	}
}

func TestDecide(t *testing.T) {
	for _, tc := range []struct {
		p, delta float64
		better   int
		want     Verdict
	}{
		{0.01, +20, -1, Regression},
		{0.01, -20, -1, Improvement},
		{0.01, -20, +1, Regression},
		{0.01, +20, +1, Improvement},
		{0.01, +4, -1, Unchanged},  // under the 5% threshold
		{0.20, +20, -1, Unchanged}, // not significant
		{0.05, +20, -1, Unchanged}, // p must be below alpha
		{0.01, +20, 0, Changed},
	} {
		if got := decide(tc.p, 0.05, tc.delta, 0.05, tc.better); got != tc.want {
			t.Errorf("decide(p=%v, delta=%v%%, better=%d) = %q, want %q", tc.p, tc.delta, tc.better, got, tc.want)
		}
	}
}

func TestIgnoreKeys(t *testing.T) {
	base := "BenchmarkStore/plugin=p/tokens=1 1 100 ns/op\n"
	next := "BenchmarkStore/plugin=p/variant=slowed/tokens=1 1 200 ns/op\n"
	r, err := Compare("base", strings.NewReader(base), "new", strings.NewReader(next), Options{Ignore: []string{"variant"}})
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Rows) != 1 || r.Rows[0].Name != "Store/plugin=p/tokens=1" || r.Rows[0].Verdict == Missing {
		t.Errorf("rows %+v: want the variant matched with the base row", r.Rows)
	}
}

// TestConfirm: a regression the rerun repeats stays one; one it does not
// repeat (a slow stretch of the machine during one night) becomes
// Unconfirmed and no longer counts; rows that were no regression are left
// as they were.
func TestConfirm(t *testing.T) {
	base := []results.Cell{cell(t, "a", 4096, 200, 1.0, 1), cell(t, "b", 4096, 200, 1.0, 2)}
	night := []results.Cell{cell(t, "a", 4096, 200, 1.3, 3), cell(t, "b", 4096, 200, 1.3, 4)} // both slow
	rerun := []results.Cell{cell(t, "a", 4096, 200, 1.3, 5), cell(t, "b", 4096, 200, 1.0, 6)} // only a is
	r := compareText(t, benchText(t, 10, base...), benchText(t, 10, night...))
	if len(r.Regressions()) != 12 {
		t.Fatalf("before Confirm: %d regression rows, want 12 (6 units of 2 cells)", len(r.Regressions()))
	}
	r.Confirm(compareText(t, benchText(t, 10, base...), benchText(t, 10, rerun...)))
	wantVerdicts(t, r, base[0].Name(), all(Regression))
	want := all(Unconfirmed)
	want["copy-ratio"] = Changed
	wantVerdicts(t, r, base[1].Name(), want)
	if len(r.Regressions()) != 6 || r.Count(Unconfirmed) != 6 || r.Rerun != "new.txt" {
		t.Errorf("after Confirm: %d regressions, %d unconfirmed, rerun %q; want 6, 6, new.txt", len(r.Regressions()), r.Count(Unconfirmed), r.Rerun)
	}
}
