package main

import (
	"image/png"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestCompareGolden: a night with one cell 20% slower, as the text and
// markdown reports show it (summary first, a line per cell, floors summed
// up), and as JSON.
func TestCompareGolden(t *testing.T) {
	base, next := "testdata/compare-base.txt", "testdata/compare-new.txt"
	goldenRun(t, "compare-text", exitViolation, "compare", "--strict", base, next)
	goldenRun(t, "compare-md", exitViolation, "compare", "--strict", "--format", "md", base, next)
	goldenRun(t, "compare-only", exitViolation, "compare", "--only-regressions", base, next)
	out := goldenRun(t, "compare-json", exitViolation, "compare", "--format", "json", base, next)
	if !strings.Contains(out, `"schema": "kvharness.compare/v1"`) {
		t.Errorf("JSON report without its schema:\n%s", out)
	}
}

// TestCompareRefuses: a CPU night against a GPU baseline is refused unless
// asked for; a night of one run, ten times slower, cannot be judged and
// fails --strict (without it, it is a warning, not a pass in silence).
func TestCompareRefuses(t *testing.T) {
	code, _, stderr := runCLI(t, "compare", "testdata/compare-gpu.txt", "testdata/compare-new.txt")
	if code != exitError || !strings.Contains(stderr, `gpu "NVIDIA H200"`) || !strings.Contains(stderr, "--allow-config-diff") {
		t.Errorf("GPU baseline, CPU night: exit %d, %q; want a refusal naming the devices and the flag", code, stderr)
	}
	if code, _, _ := runCLI(t, "compare", "--allow-config-diff", "testdata/compare-gpu.txt", "testdata/compare-new.txt"); code == exitError {
		t.Errorf("--allow-config-diff: exit %d, want a comparison", code)
	}
	code, _, stderr = runCLI(t, "compare", "--strict", "testdata/compare-base.txt", "testdata/compare-onerun.txt")
	if code != exitError || !strings.Contains(stderr, "6+1 runs") {
		t.Errorf("a one-run night ten times slower, --strict: exit %d, %q; want an error naming the runs", code, stderr)
	}
	code, _, stderr = runCLI(t, "compare", "testdata/compare-base.txt", "testdata/compare-onerun.txt")
	if code != exitPass || !strings.Contains(stderr, "warning: 2 cells cannot be judged") {
		t.Errorf("a one-run night without --strict: exit %d, %q; want a warning", code, stderr)
	}
}

// TestComparePlots: --plots draws the two nights per layout, as a PNG.
func TestComparePlots(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "overlay")
	if code, _, stderr := runCLI(t, "compare", "--plots", dir, "testdata/compare-base.txt", "testdata/compare-new.txt"); code != exitViolation {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	f, err := os.Open(filepath.Join(dir, "overlay_bf16.png"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if img, err := png.Decode(f); err != nil || img.Bounds().Dx() != 768 {
		t.Errorf("overlay_bf16.png: %v; want a 768-pixel-wide PNG", err)
	}
}
