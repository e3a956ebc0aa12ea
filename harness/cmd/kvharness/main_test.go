package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/kvharness/kvharness/harness/cuda"
	"github.com/kvharness/kvharness/harness/internal/golden"
	"github.com/kvharness/kvharness/harness/kernels/store"
	"github.com/kvharness/kvharness/harness/plugin"
	"github.com/kvharness/kvharness/internal/testtier"
	"github.com/kvharness/kvharness/plugins"
)

// goldenRun runs the CLI in process and compares stdout, stderr and the exit
// status with testdata/NAME.{stdout,stderr,code}. On a mismatch it writes
// NAME.got-stdout beside them. Reports carry no timings and no map order,
// so the same seed must give the same bytes.
func goldenRun(t *testing.T, name string, wantCode int, args ...string) string {
	t.Helper()
	var stdout, stderr bytes.Buffer
	code := run(context.Background(), &stdout, &stderr, args)
	if code != wantCode {
		t.Errorf("%s: exit %d, want %d\nstdout:\n%s\nstderr:\n%s", name, code, wantCode, stdout.String(), stderr.String())
	}
	golden.Check(t, filepath.Join("testdata", name+".stdout"), stdout.Bytes())
	golden.Check(t, filepath.Join("testdata", name+".stderr"), stderr.Bytes())
	return stdout.String()
}

// long skips an end-to-end run of many plugin processes outside the full
// suite (testtier): CI runs them all.
func long(t *testing.T) {
	t.Helper()
	testtier.FullOnly(t, "end to end over many plugin processes for many seconds")
}

// quick skips t under -short: a run of the CLI over plugin processes that
// the quick loop's incident and JSON goldens already cover.
func quick(t *testing.T) {
	t.Helper()
	testtier.SkipShort(t, "the CLI end to end over plugin processes")
}

// resultsDir is the results directory the goldens name, testdata/results,
// emptied for t and removed after it. A second go test of this checkout
// running beside this one uses the same directory, so t holds a lock on
// testdata until it is done with it: the two take turns, neither empties
// the other's repro files.
func resultsDir(t *testing.T) string {
	t.Helper()
	lock, err := os.Open("testdata")
	if err != nil {
		t.Fatal(err)
	}
	if err := unix.Flock(int(lock.Fd()), unix.LOCK_EX); err != nil {
		t.Fatalf("lock testdata for its results directory: %v", err)
	}
	dir := filepath.Join("testdata", "results")
	os.RemoveAll(dir)
	t.Cleanup(func() {
		os.RemoveAll(dir)
		lock.Close() // and with it the lock
	})
	return dir
}

func TestCheckPasses(t *testing.T) {
	goldenRun(t, "check-fusedstore", exitPass, "check", "--plugin", "fusedstore", "--cases", "60", "--backend", "cpu",
		"--results", resultsDir(t))
}

// TestCheckJobs: combinations run side by side on three plugin processes
// print the very report of a serial run. The fast loop has the same in
// harness/kernels/store (TestJobsMatchSerial); this runs in the full suite.
func TestCheckJobs(t *testing.T) {
	long(t)
	goldenRun(t, "check-fusedstore", exitPass, "check", "--plugin", "fusedstore", "--cases", "60", "--backend", "cpu",
		"--jobs", "3", "--results", resultsDir(t))
}

// TestCheckJobsCostliestFirst: an engine cache's rows, each at a shape
// of its own and so of its own cost, started costliest first on four
// plugin processes, print the report and exit status of a serial run.
// A row's cost is its shape's, whatever its cases: five a row outside the
// full suite order the rows as twenty do.
func TestCheckJobsCostliestFirst(t *testing.T) {
	quick(t)
	cases := "5"
	if testtier.Full() {
		cases = "20"
	}
	check := func(jobs string) (int, string) {
		var stdout, stderr bytes.Buffer
		code := run(context.Background(), &stdout, &stderr, []string{"check", "--plugin", "fusedstore", "--layout", "vllm-paged-fp8",
			"--cases", cases, "--backend", "cpu", "--jobs", jobs, "--results", t.TempDir()})
		return code, stdout.String()
	}
	code, serial := check("1")
	if code != exitPass || !strings.Contains(serial, "vllm-paged-fp8") {
		t.Fatalf("serial run: exit %d, report:\n%s", code, serial)
	}
	if code, jobs := check("4"); code != exitPass || jobs != serial {
		t.Errorf("on four jobs: exit %d, report:\n%s\nwant the serial run's:\n%s", code, jobs, serial)
	}
}

func TestCheckCatchesIncident(t *testing.T) {
	dir := resultsDir(t)
	out := goldenRun(t, "check-bf16scatter", exitViolation, "check", "--plugin", "bf16scatter", "--cases", "60",
		"--backend", "cpu", "--results", dir)
	files, _ := filepath.Glob(filepath.Join(dir, "*.json"))
	if len(files) != 3 {
		t.Fatalf("want a repro file per failing padding convention, got %v", files)
	}
	// The replay line points at a file that replays the same verdict.
	for _, f := range files {
		if !strings.Contains(out, f) {
			t.Errorf("report does not name %s", f)
		}
		var stdout, stderr bytes.Buffer
		if code := run(context.Background(), &stdout, &stderr, []string{"repro", f}); code != exitViolation {
			t.Errorf("repro %s: exit %d, want 1\n%s%s", f, code, stdout.String(), stderr.String())
		}
		stdout.Reset()
		if code := run(context.Background(), &stdout, &stderr, []string{"repro", f, "--plugin", "fusedstore"}); code != exitPass {
			t.Errorf("repro %s against the fix: exit %d, want 0\n%s", f, code, stdout.String())
		}
	}
}

func TestCheckJSON(t *testing.T) {
	goldenRun(t, "check-json", exitViolation, "check", "--plugin", "bf16scatter", "--padding", "sink", "--cases", "20",
		"--backend", "cpu", "--json", "--results", resultsDir(t))
}

// TestCheckReadAndTransfer: the read and transfer kinds report through the
// same writers as stores: a table, the first failure in full, the other
// failures' replay lines, and JSON.
func TestCheckReadAndTransfer(t *testing.T) {
	long(t)
	dir := resultsDir(t)
	for _, tc := range []struct {
		name string
		code int
		args []string
	}{
		{"check-read", exitPass, []string{"--plugin", "fusedstore", "--kernel", "read"}},
		{"check-read-mutant", exitViolation, []string{"--plugin", "fusedstore", "--kernel", "read", "--variant", "unmasked-tail"}},
		{"check-transfer", exitPass, []string{"--plugin", "pdtransfer"}},
		{"check-transfer-mutant", exitViolation, []string{"--plugin", "pdtransfer", "--variant", "fp8-item-len"}},
		{"check-transfer-json", exitViolation, []string{"--plugin", "pdtransfer", "--variant", "skip-buffer", "--json"}},
	} {
		goldenRun(t, tc.name, tc.code, append([]string{"check", "--cases", "40", "--backend", "cpu", "--results", dir}, tc.args...)...)
	}
}

// loadDependent are the bundled plugins whose mutants die only when the
// machine's load lets them (gostore's race): a golden table cannot hold
// them. Their properties are tested in harness/kernels/store
// (TestHeadlineProperties, under --stress).
var loadDependent = []string{"gostore"}

// goldenPlugins is names without the load-dependent plugins, comma-joined
// for --plugin: a plugin added to the bundled table joins the goldens.
func goldenPlugins(names []string) string {
	var out []string
	for _, n := range names {
		if !slices.Contains(loadDependent, n) {
			out = append(out, n)
		}
	}
	return strings.Join(out, ",")
}

// TestMutantsTable: every bundled plugin's controls pass and its mutants
// die, as the golden table records.
func TestMutantsTable(t *testing.T) {
	long(t)
	goldenRun(t, "mutants", exitPass, "mutants", "--cases", "100", "--no-times", "--backend", "cpu",
		"--plugin", goldenPlugins(plugin.UnderTestNames()))
}

// TestPlugins: kvharness plugins lists every bundled Go plugin and the
// Python examples of the tree, each as it describes itself.
func TestPlugins(t *testing.T) {
	if _, err := plugin.Python("python3"); err != nil {
		t.Skipf("the listing describes the Python examples, and no python runs them here: %v", err)
	}
	goldenRun(t, "plugins", exitPass, "plugins")
}

func TestUsageErrors(t *testing.T) {
	goldenRun(t, "no-plugin", exitError, "check")
	goldenRun(t, "bad-padding", exitError, "check", "--plugin", "fusedstore", "--padding", "zero")
	goldenRun(t, "bad-cases", exitError, "check", "--plugin", "fusedstore", "--cases", "0")
	goldenRun(t, "conflicting-layout", exitError, "check", "--plugin", "fusedstore", "--layout", "bf16", "--layout-file", "x.json")
	goldenRun(t, "unknown-plugin", exitError, "check", "--plugin", "nosuchplugin")
	goldenRun(t, "unknown-layout", exitError, "check", "--plugin", "fusedstore", "--layout", "fp4")
	if cuda.Available() != nil { // on a GPU machine this is not an error
		goldenRun(t, "cuda-without-gpu", exitError, "check", "--plugin", "fusedstore", "--backend", "cuda")
	}
	goldenRun(t, "unknown-command", exitError, "frobnicate")
}

func TestBadReproFiles(t *testing.T) {
	dir := t.TempDir()
	for name, content := range map[string]string{
		"truncated": `{"version": 1, "kernel": "store", "plugin": "fusedstore", "slots": 8, "case": {"padding": "none"`,
		"future":    `{"version": 9, "kernel": "store"}`,
		"bad-case":  `{"version": 1, "kernel": "store", "plugin": "fusedstore", "layout": {"name": "bf16", "head_dim": 16, "page_size": 4, "fields": [{"name": "v", "kind": "bf16", "to": 16}], "planes": [["v"]]}, "slots": 8, "background_seed": 1, "case": {"padding": "none", "valid": 1, "loc": [99], "rows": [{"kind": "normal", "seed": 1}]}}`,
	} {
		path := filepath.Join(dir, name+".json")
		os.WriteFile(path, []byte(content), 0o644)
		var stdout, stderr bytes.Buffer
		code := run(context.Background(), &stdout, &stderr, []string{"repro", path})
		if code != exitError || !strings.Contains(stderr.String(), "bad repro file") {
			t.Errorf("%s: exit %d, stderr %q; want exit 2 and a bad repro file message", name, code, stderr.String())
		}
	}
}

// TestCheckNamesEps: a store computing with eps 1e-8 and declaring
// nothing fails, each violation naming the eps and how to declare it.
func TestCheckNamesEps(t *testing.T) {
	out := goldenRun(t, "check-eps-undeclared", exitViolation, "check", "--plugin", "recipestore", "--variant", "eps-undeclared",
		"--layout", "fp8-rows", "--padding", "none", "--cases", "20", "--backend", "cpu", "--results", resultsDir(t))
	if !strings.Contains(out, "the bytes match eps 1e-8") || !strings.Contains(out, "declare it in the plugin's recipe (Recipe.eps)") {
		t.Errorf("the report does not name the eps:\n%s", out)
	}
}

// TestValueModes: PyTorch's arithmetic passes the default judgement and
// fails the exact one; the repro file of the exact failure replays
// exactly, and by the recipe when asked.
func TestValueModes(t *testing.T) {
	quick(t)
	dir := resultsDir(t)
	cli := func(want int, args ...string) string {
		t.Helper()
		var stdout, stderr bytes.Buffer
		if code := run(context.Background(), &stdout, &stderr, args); code != want {
			t.Fatalf("kvharness %v: exit %d, want %d\n%s%s", args, code, want, stdout.String(), stderr.String())
		}
		return stdout.String()
	}
	base := []string{"check", "--plugin", "recipestore", "--variant", "torch", "--layout", "fp8-rows", "--padding", "none",
		"--cases", "50", "--backend", "cpu", "--results", dir}
	cli(exitPass, base...)
	out := cli(exitViolation, append(base, "--value", "exact")...)
	if !strings.Contains(out, "fp8 values judged bit-exact") || !strings.Contains(out, "(exact judgement)") {
		t.Errorf("exact run:\n%s", out)
	}
	files, _ := filepath.Glob(filepath.Join(dir, "*.json"))
	if len(files) != 1 {
		t.Fatalf("repro files %v, want one", files)
	}
	data, _ := os.ReadFile(files[0])
	if !strings.Contains(string(data), `"value": "exact"`) || !strings.Contains(string(data), `"eps": 0.0001`) {
		t.Errorf("the repro file records neither the mode nor the recipe:\n%s", data)
	}
	cli(exitViolation, "repro", files[0])
	cli(exitPass, "repro", files[0], "--value", "recipe")
	var stdout, stderr bytes.Buffer
	if code := run(context.Background(), &stdout, &stderr, append(base, "--value", "bitwise")); code != exitError ||
		!strings.Contains(stderr.String(), `--value "bitwise": want recipe or exact`) {
		t.Errorf("bad --value: exit %d, %s", code, stderr.String())
	}
}

// TestMutantsExact: every store mutant dies under bit-exact judgement
// too: the tolerance is not what kills them. --value judges stored values
// only, so the plugins that store are the ones it can change.
func TestMutantsExact(t *testing.T) {
	long(t)
	goldenRun(t, "mutants-exact", exitPass, "mutants", "--cases", "100", "--no-times", "--backend", "cpu", "--value", "exact",
		"--plugin", goldenPlugins(plugins.Serving(store.Name)))
}

// TestHelpHelp: kvharness help help is the command list, as kvharness help
// is, not an unknown command.
func TestHelpHelp(t *testing.T) {
	var help, helpHelp, stderr bytes.Buffer
	if code := run(context.Background(), &help, &stderr, []string{"help"}); code != exitPass {
		t.Fatalf("help: exit %d", code)
	}
	if code := run(context.Background(), &helpHelp, &stderr, []string{"help", "help"}); code != exitPass || helpHelp.String() != help.String() {
		t.Errorf("help help: exit %d, %q; want help's command list\n%s", code, helpHelp.String(), stderr.String())
	}
}
