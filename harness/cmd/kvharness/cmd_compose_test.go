package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kvharness/kvharness/harness/junit/junittest"
)

// TestComposedScaleContract: a writer of amax/448 scales (gostore) and a
// reader of power-of-two scales (gostore's pow2-scale-read), each correct
// alone, caught on the scale field with both kernels named; its replay
// line runs as printed and finds the same.
func TestComposedScaleContract(t *testing.T) {
	args := []string{"check", "--writer", "gostore", "--reader", "gostore", "--reader-variant", "pow2-scale-read",
		"--layout", "fp8-paged", "--padding", "none", "--cases", "20", "--results", t.TempDir()}
	out := goldenRun(t, "compose-scale", exitViolation, args...)
	replayed := goldenRun(t, "compose-scale", exitViolation, replayArgs(t, out, t.TempDir())...)
	if replayed != out {
		t.Errorf("the replay line's run differs from the report it came from")
	}
	for _, alone := range [][]string{
		{"check", "--plugin", "gostore", "--layout", "fp8-paged", "--cases", "50", "--padding", "none"},
		{"check", "--plugin", "gostore", "--variant", "pow2-scale-read", "--kernel", "read", "--layout", "fp8-paged", "--cases", "50"},
	} {
		checkAlone(t, alone)
	}
}

// TestComposedPlanarInterleaved: the indexer K cache written
// block-planar (gostore, fp8-paged) and read token-interleaved (gostore's
// read of fp8-rows, the same bytes a page), each correct alone, caught on
// the value field.
func TestComposedPlanarInterleaved(t *testing.T) {
	goldenRun(t, "compose-planar", exitViolation, "check", "--writer", "gostore", "--reader", "gostore", "--layout", "fp8-paged",
		"--reader-layout", "fp8-rows", "--page-size", "16", "--padding", "count", "--cases", "20", "--results", t.TempDir())
	checkAlone(t, []string{"check", "--plugin", "gostore", "--kernel", "read", "--layout", "fp8-rows", "--page-size", "16", "--cases", "50"})
}

// TestComposedPairPasses: a matching pair, kernels written apart, every
// padding.
func TestComposedPairPasses(t *testing.T) {
	goldenRun(t, "compose-pass", exitPass, "check", "--writer", "recipestore", "--reader", "fusedstore", "--layout", "fp8-rows",
		"--head-dim", "96", "--page-size", "16", "--cases", "30", "--results", t.TempDir())
}

// replayArgs is the command line a report's replay line prints, its
// results folder set to dir.
func replayArgs(t *testing.T, out, dir string) []string {
	t.Helper()
	_, line, ok := strings.Cut(out, "  replay: kvharness ")
	if !ok {
		t.Fatalf("no replay line in:\n%s", out)
	}
	line, _, _ = strings.Cut(line, "\n")
	return append(strings.Fields(line), "--results", dir)
}

func checkAlone(t *testing.T, args []string) {
	t.Helper()
	if code, out, errOut := runCLI(t, append(args, "--results", t.TempDir())...); code != exitPass {
		t.Errorf("%v alone: exit %d\n%s%s", args, code, out, errOut)
	}
}

// TestComposedJUnit: check --writer/--reader --junit writes a case per
// padding, a failing pair's report (its minimal case, both kernels, the
// field, the replay line) as the failure's body; the file is JUnit XML.
func TestComposedJUnit(t *testing.T) {
	file := filepath.Join(t.TempDir(), "compose.xml")
	code, out, errOut := runCLI(t, "check", "--writer", "gostore", "--reader", "gostore", "--layout", "fp8-paged",
		"--reader-layout", "fp8-rows", "--page-size", "16", "--padding", "count", "--cases", "20", "--results", t.TempDir(), "--junit", file)
	if code != exitViolation {
		t.Fatalf("exit %d, want 1\n%s%s", code, out, errOut)
	}
	junittest.Validate(t, file)
	if got, want := junittest.Counts(t, file), "kvharness check --writer gostore --reader gostore: failure"; strings.Join(got, "\n") != want {
		t.Errorf("cases %q, want %q", got, want)
	}
	data, _ := os.ReadFile(file)
	for _, want := range []string{`name="fp8-paged/count"`, "writer gostore → reader gostore, fp8-paged, padding count: case 1: seen value",
		"minimal case (", "the writer lays the cache out as fp8-paged, the reader reads it as fp8-rows", "replay: kvharness check --writer gostore"} {
		if !strings.Contains(string(data), want) {
			t.Errorf("the JUnit file lacks %q:\n%s", want, data)
		}
	}
}
