package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kvharness/kvharness/harness/plugin"
)

// TestFuzzFinding: go test -fuzz exits 1 for a finding and for a build or
// setup failure alike; a written crasher and a failing seed of the
// corpus are findings (kvharness fuzz exits 1), anything else is not
// (exit 2).
func TestFuzzFinding(t *testing.T) {
	for _, tc := range []struct{ out, want string }{
		{"--- FAIL: FuzzStore (1.20s)\n    Failing input written to testdata/fuzz/FuzzStore/8f3a\n    To re-run:\n", "the crasher is testdata/fuzz/FuzzStore/8f3a"},
		{"failure while testing seed corpus entry: FuzzStore/seed#1\n--- FAIL: FuzzStore (26.48s)\n", "seed FuzzStore/seed#1 of the corpus fails (go test -run='^FuzzStore/seed#1$' replays it)"},
		{"--- FAIL: FuzzStore (0.00s)\n    fuzzing.go:300: plugin not found\nFAIL\n", ""},
		{"# github.com/kvharness/kvharness/harness/kernels/store/fuzz\n./x.go:1: syntax error\nFAIL [build failed]\n", ""},
	} {
		if got := finding([]byte(tc.out)); got != tc.want {
			t.Errorf("finding(%q) = %q, want %q", tc.out, got, tc.want)
		}
	}
}

// TestFuzzPluginAbsolute: go test runs in the target's folder, so kvharness
// fuzz hands it the plugin as an absolute path: a manifest's, and a command
// line's files; a plugin that does not resolve is an error before any
// build.
func TestFuzzPluginAbsolute(t *testing.T) {
	dir := t.TempDir()
	t.Chdir(dir)
	os.WriteFile("plugin.py", []byte("print()\n"), 0o644)
	os.WriteFile("m.json", []byte(`{"name": "mine", "command": ["python3", "plugin.py"]}`), 0o644)
	py, err := plugin.Python("python3")
	if err != nil {
		t.Skipf("no python for a manifest's python3: %v", err)
	}
	got, name, err := fuzzPlugin("m.json")
	if want := filepath.Join(dir, "m.json"); err != nil || got != want || name != "mine" {
		t.Errorf("manifest: %q (%s), %v; want %q (mine)", got, name, err, want)
	}
	got, _, err = fuzzPlugin(py + " plugin.py --flag")
	if want := py + " " + filepath.Join(dir, "plugin.py") + " --flag"; err != nil || got != want {
		t.Errorf("command line: %q, %v; want %q", got, err, want)
	}
	if _, _, err := fuzzPlugin("missing.json"); err == nil || !strings.Contains(err.Error(), "missing.json") {
		t.Errorf("a missing manifest: %v; want an error naming it", err)
	}
}
