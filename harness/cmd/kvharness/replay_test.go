package main

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/kvharness/kvharness/harness/plugin"
)

// TestReplayLineRunsAsPrinted: a failure of a plugin named by its manifest
// is saved under the plugin's own name (torchscatter-…, not
// kvharness-plugin-…), and its replay line names --plugin with the
// manifest's path, so that the line, run as printed, replays it; the
// file alone still runs no command.
func TestReplayLineRunsAsPrinted(t *testing.T) {
	quick(t)
	if _, err := plugin.Python("python3"); err != nil {
		t.Skipf("no python runs the Python examples here: %v", err)
	}
	manifest, _ := filepath.Abs(filepath.Join("..", "..", "..", "plugins", "python", "torchscatter", "kvharness-plugin.json"))
	results := t.TempDir()
	code, out, errOut := runCLI(t, "check", "--plugin", manifest, "--padding", "count", "--cases", "20", "--backend", "cpu", "--results", results)
	if code != exitViolation {
		t.Fatalf("check torchscatter --padding count: exit %d, want 1\n%s%s", code, out, errOut)
	}
	m := regexp.MustCompile(`(?m)^  replay: (kvharness repro (\S+) --plugin (\S+))   \(--plugin named: a repro file alone runs no command\)$`).FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("no replay line naming --plugin in:\n%s", out)
	}
	if base := filepath.Base(m[2]); !strings.HasPrefix(base, "torchscatter-bf16-count-padding-") || m[3] != manifest {
		t.Errorf("replay line %q: want a file named after torchscatter and --plugin %s", m[1], manifest)
	}
	argv := shellWords(t, m[1])
	var stdout, stderr bytes.Buffer
	if code := run(context.Background(), &stdout, &stderr, argv[1:]); code != exitViolation || !strings.Contains(stdout.String(), "FAIL torchscatter") {
		t.Errorf("%s: exit %d, want 1 with the failure\n%s%s", m[1], code, &stdout, &stderr)
	}
	stdout.Reset()
	stderr.Reset()
	if code := run(context.Background(), &stdout, &stderr, []string{"repro", m[2]}); code != exitError || !strings.Contains(stderr.String(), "runs no command from it") {
		t.Errorf("repro FILE alone: exit %d, stderr %q; want 2, running nothing", code, &stderr)
	}
}

// shellWords splits a line as a POSIX shell does (sh itself, so the test
// reads the line as a user's shell would).
func shellWords(t *testing.T, line string) []string {
	t.Helper()
	out, err := exec.Command("sh", "-c", `for w in `+line+`; do printf '%s\0' "$w"; done`).Output()
	if err != nil {
		t.Fatalf("sh could not read %q: %v", line, err)
	}
	return strings.Split(strings.TrimSuffix(string(out), "\x00"), "\x00")
}

// TestReplayable: a repro file names a bundled plugin as it is and a path
// absolute, a manifest in the working folder (no slash) included, so the
// replay line runs from any folder; a command line stays as typed.
func TestReplayable(t *testing.T) {
	wd, _ := os.Getwd()
	for arg, want := range map[string]string{
		"fusedstore":                 "fusedstore",
		"kvharness-plugin.json":      filepath.Join(wd, "kvharness-plugin.json"),
		"./mystore":                  filepath.Join(wd, "mystore"),
		"python3 plugin.py":          "python3 plugin.py",
		"/abs/kvharness-plugin.json": "/abs/kvharness-plugin.json",
	} {
		if got := replayable(arg); got != want {
			t.Errorf("replayable(%q) = %q, want %q", arg, got, want)
		}
	}
}
