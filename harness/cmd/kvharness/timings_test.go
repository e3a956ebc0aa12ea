package main

import (
	"regexp"
	"strings"
	"testing"
)

// TestCheckTimings: --timings prints, after the report and on stderr
// alone, where a failing check's time went: the setup, the row's opening,
// its search up to the first failure, the re-runs, shrinking and the
// fresh-process check; stdout is the report as without it.
func TestCheckTimings(t *testing.T) {
	args := []string{"check", "--plugin", "bf16scatter", "--backend", "cpu", "--layout", "bf16", "--padding", "count",
		"--cases", "60", "--slots", "4096", "--results", t.TempDir()}
	code, plain, _ := runCLI(t, args...)
	tcode, out, errOut := runCLI(t, append(args, "--timings")...)
	if code != exitViolation || tcode != exitViolation {
		t.Fatalf("exit %d without --timings, %d with; want %d", code, tcode, exitViolation)
	}
	if strings.Contains(out, "timings") || out != plain {
		t.Errorf("--timings changed stdout:\n%s", out)
	}
	for _, re := range []string{
		`(?m)^timings \(from the command's start\):$`,
		`(?m)^  setup   [0-9.]+[µm]?s: the plugin started`,
		`(?m)^  bf16/count: open [0-9.]+[µm]?s · first failure after [0-9.]+[µm]?s \(case [0-9]+\) · re-runs [0-9.]+[µm]?s · shrink [0-9.]+[µm]?s · fresh process [0-9.]+[µm]?s$`,
		`(?m)^  report  [0-9.]+[µm]?s after the start$`,
	} {
		if !regexp.MustCompile(re).MatchString(errOut) {
			t.Errorf("stderr lacks %s:\n%s", re, errOut)
		}
	}
}
