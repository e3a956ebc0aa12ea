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
)

// TestSlowedIsSlower: a cell 20% slower in every run is one slower cell,
// however many units show it; the units are its evidence.
func TestSlowedIsSlower(t *testing.T) {
	base := cell(t, "a", 4096, 6, 200, 1.0, 1)
	slow := cell(t, "a", 4096, 6, 200, 1.2, 2)
	r := compareText(t, benchText(t, base), benchText(t, slow))
	c := cellFor(t, r, base.Name())
	if c.Verdict != Slower || c.Unit != "p50-sec/op" || c.DeltaPct < 15 || c.DeltaPct > 25 || c.Old.N != 6 || c.New.N != 6 || c.P > 0.01 {
		t.Errorf("cell %+v; want slower on p50-sec/op, about +20%%, 6+6 runs, p < 0.01", c)
	}
	if len(r.Slower()) != 1 || len(r.Cells) != 1 {
		t.Errorf("%d slower cells of %d; want the one cell once", len(r.Slower()), len(r.Cells))
	}
	ev := evidenceFor(c)
	if ev["GB/s"].DeltaPct > -12 || ev["sec/op"].DeltaPct < 15 {
		t.Errorf("evidence %+v; want GB/s down and the mean up", ev)
	}
}

func TestSpedUpIsFaster(t *testing.T) {
	base := cell(t, "a", 4096, 6, 200, 1.0, 1)
	fast := cell(t, "a", 4096, 6, 200, 0.8, 2)
	r := compareText(t, benchText(t, base), benchText(t, fast))
	if c := cellFor(t, r, base.Name()); c.Verdict != Faster || len(r.Slower()) != 0 {
		t.Errorf("20%% faster: %s, %d slower", c.Verdict, len(r.Slower()))
	}
}

// TestSameDistributionPasses: runs drawn from one distribution are the
// same, night after night.
func TestSameDistributionPasses(t *testing.T) {
	for seed := uint64(10); seed < 40; seed++ {
		a := cell(t, "a", 4096, 6, 200, 1.0, seed)
		b := cell(t, "a", 4096, 6, 200, 1.0, seed+100)
		r := compareText(t, benchText(t, a), benchText(t, b))
		if c := r.Cells[0]; c.Verdict != Same {
			t.Errorf("seed %d: a rerun of one distribution: %s (%s)", seed, c.Verdict, c.Why)
		}
	}
}

// TestRunsNotSamplesAreCounted: a night of one run has thousands of
// samples but one run: it cannot be judged, however far it moved.
func TestRunsNotSamplesAreCounted(t *testing.T) {
	base := cell(t, "a", 4096, 6, 200, 1.0, 1)
	one := cell(t, "a", 4096, 1, 5000, 10, 2) // ten times slower, one run
	r := compareText(t, benchText(t, base), benchText(t, one))
	c := cellFor(t, r, base.Name())
	if c.Verdict != Unsure || !strings.Contains(c.Lacks, "6+1 runs") || len(r.Lacking()) != 1 || len(r.Slower()) != 0 {
		t.Errorf("one run ten times slower: %s, lacks %q; want unsure for lack of runs, and lacking", c.Verdict, c.Lacks)
	}
}

func TestSmallChangeUnderThreshold(t *testing.T) {
	base := cell(t, "a", 4096, 16, 400, 1.0, 1)
	slower := cell(t, "a", 4096, 16, 400, 1.03, 2) // 3% slower: significant, under the thresholds
	c := cellFor(t, compareText(t, benchText(t, base), benchText(t, slower)), base.Name())
	if c.P >= 0.05 || c.Verdict != Same {
		t.Errorf("3%% slower: p %v, %s; want significant but the same", c.P, c.Verdict)
	}
	r, err := Compare("b", bytes.NewReader(benchText(t, base)), "n", bytes.NewReader(benchText(t, slower)), Options{Threshold: 0.01})
	if err != nil {
		t.Fatal(err)
	}
	if c := cellFor(t, r, base.Name()); c.Verdict != Slower {
		t.Errorf("3%% slower with a 1%% threshold: %s (%s), want slower", c.Verdict, c.Why)
	}
}

func TestMissingCell(t *testing.T) {
	a, b := cell(t, "a", 16, 6, 50, 1, 1), cell(t, "b", 16, 6, 50, 1, 2)
	r := compareText(t, benchText(t, a, b), benchText(t, a))
	c := cellFor(t, r, b.Name())
	if c.Verdict != Missing || c.Old.N != 6 || c.New.N != 0 || len(r.Lacking()) != 1 {
		t.Errorf("cell gone from the new night: %s, %d+%d, lacking %d; want missing and lacking", c.Verdict, c.Old.N, c.New.N, len(r.Lacking()))
	}
	r = compareText(t, benchText(t, a), benchText(t, a, b))
	if c := cellFor(t, r, b.Name()); c.Verdict != Missing || len(r.Lacking()) != 0 {
		t.Errorf("a new cell: %s, lacking %d; want missing, not lacking (there is no baseline to miss)", c.Verdict, len(r.Lacking()))
	}
}

func TestUnitMetadataSetsDirection(t *testing.T) {
	var base, next strings.Builder
	base.WriteString("Unit widgets better=higher\n")
	next.WriteString("Unit widgets better=higher\n")
	for i := range 6 {
		fmt.Fprintf(&base, "BenchmarkX 1 %d ns/op %d widgets\n", 100+i, 100+i)
		fmt.Fprintf(&next, "BenchmarkX 1 %d ns/op %d widgets\n", 100+i, 10+i)
	}
	r := compareText(t, []byte(base.String()), []byte(next.String()))
	ev := evidenceFor(r.Cells[0])
	if ev["widgets"].Better != 1 || ev["widgets"].DeltaPct > -80 || r.Cells[0].Verdict != Same {
		t.Errorf("widgets falling: %+v, verdict %s; want better=higher evidence and the time the same", ev["widgets"], r.Cells[0].Verdict)
	}
}

// TestRefusesOtherDevices: a night of another device is refused, naming
// both; --allow-config-diff turns the refusal into a warning; a driver
// update is a warning.
func TestRefusesOtherDevices(t *testing.T) {
	a := cell(t, "a", 16, 6, 50, 1, 1)
	b := cell(t, "a", 16, 6, 50, 1, 2)
	b.Env.Device = "cpu"
	_, err := Compare("gpu.txt", bytes.NewReader(benchText(t, a)), "cpu.txt", bytes.NewReader(benchText(t, b)), Options{})
	var ce *ConfigError
	if !errors.As(err, &ce) || !strings.Contains(err.Error(), `gpu.txt ran on gpu "NVIDIA H200", cpu.txt on "cpu"`) {
		t.Fatalf("GPU base, CPU night: %v; want a ConfigError naming both", err)
	}
	r, err := Compare("gpu.txt", bytes.NewReader(benchText(t, a)), "cpu.txt", bytes.NewReader(benchText(t, b)), Options{AllowConfigDiff: true})
	if err != nil || len(r.Warnings) != 1 {
		t.Errorf("--allow-config-diff: %v, warnings %v; want a warning", err, r.Warnings)
	}
	b.Env.Device, b.Env.Driver, b.Env.Commit = a.Env.Device, "575.51", "other"
	r = compareText(t, benchText(t, a), benchText(t, b))
	if len(r.Warnings) != 1 || !strings.Contains(r.Warnings[0].Error(), `config driver differs: "570.86.15" in base.txt, "575.51" in new.txt`) {
		t.Errorf("warnings = %v, want one about the driver only", r.Warnings)
	}
}

// TestRefusesChunkedFiles: a file kvharness bench wrote before it
// measured in runs (chunks of one run per line) is refused.
func TestRefusesChunkedFiles(t *testing.T) {
	old := "plugin-version: 1.0.0\n"
	for i := range 10 {
		old += fmt.Sprintf("BenchmarkStore/plugin=p/tokens=1 20 %d ns/op\n", 30+i%2)
	}
	_, err := Compare("cpu.txt", strings.NewReader(old), "new.txt", bytes.NewReader(benchText(t, cell(t, "p", 1, 6, 20, 1, 1))), Options{})
	if !errors.Is(err, ErrChunked) || !strings.HasPrefix(err.Error(), "cpu.txt: ") {
		t.Errorf("a chunked baseline: %v; want ErrChunked naming it", err)
	}
}

// TestGoTestNamesMatch: go test -bench's names (with a -N GOMAXPROCS
// suffix and no kvharness config) compare with kvharness bench's.
func TestGoTestNamesMatch(t *testing.T) {
	c := cell(t, "a", 16, 6, 50, 1, 1)
	var gotest strings.Builder
	gotest.WriteString("goos: linux\ngoarch: amd64\npkg: github.com/kvharness/kvharness/bench\ncpu: AMD EPYC\n")
	for i := range 6 {
		fmt.Fprintf(&gotest, "Benchmark%s-2 \t 1000\t %d ns/op\t %d p50-ns/op\n", c.Name(), 10000+i, 10000+i)
	}
	r, err := Compare("gotest.txt", strings.NewReader(gotest.String()), "night.txt", bytes.NewReader(benchText(t, c)), Options{AllowConfigDiff: true})
	if err != nil {
		t.Fatal(err)
	}
	if r.Compared() != 1 || r.Cells[0].Name != c.Name() || r.Cells[0].Verdict == Missing {
		t.Errorf("cells %+v; want the go test benchmark and the kvharness cell as one", r.Cells)
	}
}

func TestFilter(t *testing.T) {
	a, b := cell(t, "a", 16, 6, 50, 1, 1), cell(t, "b", 16, 6, 50, 1, 2)
	text := benchText(t, a, b)
	r, err := Compare("x", bytes.NewReader(text), "y", bytes.NewReader(text), Options{Filter: "/plugin:b"})
	if err != nil || len(r.Cells) != 1 || r.Cells[0].Name != b.Name() {
		t.Errorf("--filter /plugin:b: %v, %d cells; want b alone", err, len(r.Cells))
	}
	if _, err := Compare("x", bytes.NewReader(text), "y", bytes.NewReader(text), Options{Filter: "/plugin:("}); err == nil || !strings.Contains(err.Error(), "--filter") {
		t.Errorf("a bad filter: %v; want an error naming --filter", err)
	}
}

func TestConfirm(t *testing.T) {
	base := cell(t, "a", 4096, 6, 200, 1.0, 1)
	slow := cell(t, "a", 4096, 6, 200, 1.3, 2)
	again := cell(t, "a", 4096, 6, 200, 1.3, 3)
	fine := cell(t, "a", 4096, 6, 200, 1.0, 4)
	r := compareText(t, benchText(t, base), benchText(t, slow))
	r.Confirm(compareText(t, benchText(t, base), benchText(t, again)))
	if len(r.Slower()) != 1 {
		t.Errorf("confirmed: %d slower, want 1", len(r.Slower()))
	}
	r = compareText(t, benchText(t, base), benchText(t, slow))
	r.Confirm(compareText(t, benchText(t, base), benchText(t, fine)))
	if c := r.Cells[0]; c.Verdict != Unsure || c.Lacks != "" || !strings.Contains(c.Why, "not slower in the rerun (same") || len(r.Lacking()) != 0 {
		t.Errorf("unconfirmed: %s, %q, lacks %q; want unsure, not for lack of data", c.Verdict, c.Why, c.Lacks)
	}
}

func TestMalformedFiles(t *testing.T) {
	good := benchText(t, cell(t, "a", 16, 6, 50, 1, 1))
	for _, tc := range []struct{ file, wantPos string }{
		{"malformed.txt", "malformed.txt:4: "},
		{"truncated.txt", "truncated.txt:3: "},
	} {
		data, err := os.ReadFile(filepath.Join("testdata", tc.file))
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
	data := benchText(t, cell(t, "a", 16, 6, 50, 1, 1))
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
	if runsNeeded(0.05) != 4 || runsNeeded(0.01) != 5 {
		t.Errorf("runs needed: %d at 0.05, %d at 0.01; want 4 and 5", runsNeeded(0.05), runsNeeded(0.01))
	}
}

func TestDecide(t *testing.T) {
	for _, tc := range []struct {
		p, delta float64
		better   int
		want     Verdict
	}{
		{0.01, +20, -1, Slower},
		{0.01, -20, -1, Faster},
		{0.01, -20, +1, Slower},
		{0.01, +20, +1, Faster},
		{0.01, +4, -1, Same},  // under the 5% threshold
		{0.20, +20, -1, Same}, // not significant
		{0.05, +20, -1, Same}, // p must be below alpha
		{0.01, +20, 0, Same},  // no direction: evidence only
	} {
		if got := decide(tc.p, 0.05, tc.delta, 0.05, tc.better); got != tc.want {
			t.Errorf("decide(p=%v, delta=%v%%, better=%d) = %q, want %q", tc.p, tc.delta, tc.better, got, tc.want)
		}
	}
}

func TestIgnoreKeys(t *testing.T) {
	var base, next strings.Builder
	for i := range 6 {
		fmt.Fprintf(&base, "BenchmarkStore/plugin=p/tokens=1 1 %d ns/op\n", 100+i)
		fmt.Fprintf(&next, "BenchmarkStore/plugin=p/variant=slowed/tokens=1 1 %d ns/op\n", 200+i)
	}
	r, err := Compare("base", strings.NewReader(base.String()), "new", strings.NewReader(next.String()), Options{Ignore: []string{"variant"}})
	if err != nil || len(r.Cells) != 1 || r.Cells[0].Verdict != Slower {
		t.Errorf("--ignore variant: %v, cells %+v; want one slower cell", err, r.Cells)
	}
}
