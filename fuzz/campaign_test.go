package fuzz

import (
	"bytes"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/kvharness/kvharness/harness/fuzzing"
	"github.com/kvharness/kvharness/harness/plugin"
	"github.com/kvharness/kvharness/internal/testtier"
)

// These tests run go test -fuzz on the store kind's FuzzStore in a child go
// command, the way CI's fuzz step does, on one fuzzing worker: in its
// out-of-process lane (storeLane, what kvharness fuzz runs) and, for one
// plugin, in the kind's own package, where coverage guides it. The correct
// plugins are fuzzed 10 s each, 30 s with KVHARNESS_LONG=1 (the workflow's
// campaigns run for minutes); the incident's scatter until its first
// crasher. -short skips them.

// storePackage is where the store kind and its committed corpus live, and
// storeLane its out-of-process fuzz lane, from the root.
var (
	storePackage = filepath.Join("harness", "kernels", "store")
	storeLane    = filepath.Join(storePackage, "fuzz")
)

func fuzzCmd(t *testing.T, root, pkg, pluginName string, fuzztime time.Duration) (string, error) {
	t.Helper()
	testtier.FullOnly(t, "fuzz campaigns take half a minute and more")
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("no go command on PATH")
	}
	// -trimpath keys the build cache by content, not directory: the three
	// campaigns, the copy included, share one instrumented build.
	cmd := exec.Command("go", "test", "-trimpath", "-run=^$", "-fuzz=^FuzzStore$", "-fuzztime="+fuzztime.String(),
		"-fuzzminimizetime=5s", "-parallel=1", ".")
	cmd.Dir = filepath.Join(root, pkg)
	// go test -trimpath records no source tree in the fuzz binary: its
	// out-of-process lane builds its checker (kvharness) from this one's.
	// The checker holds no corpus, so a copied tree's campaign builds it
	// from the tree this test was built from, as kvharness fuzz does.
	src, _ := plugin.SourceRoot()
	cmd.Env = append(os.Environ(), plugin.SourceEnv+"="+src, "KVHARNESS_PLUGIN="+pluginName, "KVHARNESS_FUZZ_MODE=out-of-process")
	out, err := cmd.CombinedOutput()
	t.Logf("%s fuzz output (last lines):\n%s", pluginName, lastLines(string(out), 8))
	if err != nil && fuzzing.DeadlineRace(out) {
		t.Logf("%s: no input failed; go test called the end of -fuzztime a failure (Go 1.26's coordinator race, golang/go#75804)", pluginName)
		err = nil
	}
	return string(out), err
}

func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}

// correctFuzzTime is how long each correct plugin is fuzzed.
func correctFuzzTime() time.Duration {
	if os.Getenv("KVHARNESS_LONG") != "" {
		return 30 * time.Second
	}
	return 10 * time.Second
}

// TestFuzzCorrectPlugins is CI's bounded fuzz step: fuzzing each correct
// store plugin must find nothing.
func TestFuzzCorrectPlugins(t *testing.T) {
	root, ok := plugin.SourceRoot()
	if !ok {
		t.Skip("not inside the kvharness source tree")
	}
	for _, run := range []struct{ pkg, plugin string }{{storeLane, "fusedstore"}, {storeLane, "fp8store"}, {storePackage, "fusedstore"}} {
		if out, err := fuzzCmd(t, root, run.pkg, run.plugin, correctFuzzTime()); err != nil {
			t.Errorf("fuzzing %s in %s failed (%v); a crasher, if any, is in its testdata/fuzz/FuzzStore:\n%s", run.plugin, run.pkg, err, lastLines(out, 40))
		}
	}
}

// TestFuzzFindsIncident fuzzes the incident's scatter in the
// out-of-process lane, guided by the cases' features alone, without the
// committed corpus (in a copy of the source tree, so that corpus, which
// already holds the bug, neither short-cuts the search nor receives the
// crasher; Go's fuzz cache of earlier runs may still seed it) and requires
// a crasher file showing a padding or guard violation.
func TestFuzzFindsIncident(t *testing.T) {
	testtier.FullOnly(t, "fuzz campaigns take half a minute and more")
	root, ok := plugin.SourceRoot()
	if !ok {
		t.Skip("not inside the kvharness source tree")
	}
	tmp := t.TempDir()
	if err := copyTree(root, tmp); err != nil {
		t.Fatal(err)
	}
	out, err := fuzzCmd(t, tmp, storeLane, "bf16scatter", 60*time.Second)
	if err == nil {
		t.Fatalf("fuzzing bf16scatter found nothing:\n%s", lastLines(out, 20))
	}
	if !strings.Contains(out, "property padding violated") && !strings.Contains(out, "property guard violated") {
		t.Errorf("the failure is not a padding or guard violation:\n%s", lastLines(out, 40))
	}
	crashers, _ := os.ReadDir(filepath.Join(tmp, storeLane, "testdata", "fuzz", "FuzzStore"))
	if len(crashers) == 0 || !strings.Contains(out, "Failing input written to testdata/fuzz/FuzzStore/") {
		t.Fatalf("no crasher written:\n%s", lastLines(out, 20))
	}
	data, _ := os.ReadFile(filepath.Join(tmp, storeLane, "testdata", "fuzz", "FuzzStore", crashers[0].Name()))
	if !bytes.HasPrefix(data, []byte("go test fuzz v1\n")) {
		t.Errorf("crasher %s is not a corpus file: %q", crashers[0].Name(), data)
	}
}

// copyTree copies the module's sources, leaving out version control,
// results, build outputs and the fuzz corpus.
func copyTree(src, dst string) error {
	skip := map[string]bool{".git": true, "kvharness-results": true, "dist": true, "node_modules": true}
	return filepath.WalkDir(src, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, path)
		if !d.IsDir() && skip[d.Name()] {
			return nil // a file (a worktree's .git): SkipDir would skip the rest of its directory
		}
		if skip[d.Name()] || rel == filepath.Join(storePackage, "testdata", "fuzz") || rel == filepath.Join(storeLane, "testdata", "fuzz") {
			if !d.IsDir() {
				return nil // a worktree's .git is a file: skip it, not the folder it is in
			}
			return filepath.SkipDir
		}
		if d.IsDir() {
			return os.MkdirAll(filepath.Join(dst, rel), 0o755)
		}
		if !d.Type().IsRegular() {
			return nil
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(dst, rel), data, 0o644)
	})
}
