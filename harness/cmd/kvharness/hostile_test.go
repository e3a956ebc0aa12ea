package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kvharness/kvharness/harness/internal/gobuild"
)

// hostileTree writes a folder that claims to be the kvharness source tree
// (its go.mod names the module) and holds a plugins/bf16scatter whose
// main leaves a marker file and exits: the folder of a bug report whose
// author wants their code run. It returns the folder and the marker's
// path.
func hostileTree(t *testing.T) (dir, marker string) {
	t.Helper()
	dir = t.TempDir()
	marker = filepath.Join(dir, "PWNED")
	write(t, filepath.Join(dir, "go.mod"), "module "+gobuild.Module+"\n\ngo 1.26.0\n")
	os.MkdirAll(filepath.Join(dir, "plugins", "bf16scatter"), 0o755)
	write(t, filepath.Join(dir, "plugins", "bf16scatter", "main.go"), `package main

import "os"

func main() {
	os.WriteFile(`+"`"+marker+"`"+`, []byte("hostile code ran\n"), 0o644)
	os.Exit(3)
}
`)
	return dir, marker
}

// TestHostileFolderRunsOwnCode: check and repro run in a folder whose
// go.mod claims kvharness's module and whose plugins/bf16scatter is
// someone else's run kvharness's own bf16scatter: it finds the incident
// (exit 1, the real plugin's padding violation, which the hostile one, an
// exit 3 before any handshake, could not show) and the hostile main never
// runs (no marker). Only --plugin-source naming the folder builds from it.
func TestHostileFolderRunsOwnCode(t *testing.T) {
	quick(t)
	dir, marker := hostileTree(t)
	t.Chdir(dir)
	var stdout, stderr bytes.Buffer
	code := run(context.Background(), &stdout, &stderr, []string{"check", "--plugin", "bf16scatter", "--layout", "bf16",
		"--padding", "sink", "--cases", "20", "--backend", "cpu"})
	if code != exitViolation || !strings.Contains(stdout.String(), "property padding") {
		t.Fatalf("check in the hostile folder: exit %d, want 1 with the incident's padding violation\n%s%s", code, stdout.String(), stderr.String())
	}
	files, _ := filepath.Glob(filepath.Join(dir, "kvharness-results", "*.json"))
	if len(files) != 1 {
		t.Fatalf("want one repro file, got %v", files)
	}
	stdout.Reset()
	if code := run(context.Background(), &stdout, &stderr, []string{"repro", files[0]}); code != exitViolation {
		t.Errorf("repro in the hostile folder: exit %d, want 1\n%s%s", code, stdout.String(), stderr.String())
	}
	if _, err := os.Stat(marker); err == nil {
		t.Fatal("the hostile folder's plugin ran")
	}
	// Asked for by name, the folder is built from: its plugin runs.
	stderr.Reset()
	code = run(context.Background(), &stdout, &stderr, []string{"check", "--plugin-source", dir, "--plugin", "bf16scatter",
		"--layout", "bf16", "--padding", "sink", "--cases", "5", "--backend", "cpu"})
	if _, err := os.Stat(marker); err != nil || code != exitError {
		t.Errorf("--plugin-source %s: exit %d, marker %v; want the named tree's plugin run (and fail its handshake)\n%s", dir, code, err, stderr.String())
	}
	if v, ok := os.LookupEnv(gobuild.SourceEnv); ok {
		t.Errorf("--plugin-source outlived its command: %s=%s", gobuild.SourceEnv, v)
	}
}
