package bench

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// fakeKvharness stands in for the kvharness command in nightly.sh's tests:
// bench leaves a bench.txt in --out, compare exits FIRST_RC, or CONFIRM_RC
// when given --confirm; every call is logged.
const fakeKvharness = `#!/bin/sh
echo "$*" >>"$LOG"
case "$1" in
bench)
	while [ $# -gt 0 ]; do [ "$1" = --out ] && out=$2; shift; done
	mkdir -p "$out" && echo run >"$out/runs.jsonl" && echo cell >"$out/cells.jsonl" && echo BenchmarkStore >"$out/bench.txt"
	exit 0 ;;
compare)
	case "$*" in *--confirm*) exit "$CONFIRM_RC" ;; *) exit "$FIRST_RC" ;; esac ;;
esac
exit 2
`

// TestNightlyConfirmsRegressions: the nightly job fails on a regression
// only when a rerun of the matrix confirms it, reruns nothing when the
// first comparison passes or errs, and passes compare's errors on, the
// confirming one's too.
func TestNightlyConfirmsRegressions(t *testing.T) {
	if _, err := exec.LookPath("bash"); err != nil {
		t.Skip("no bash")
	}
	dir := t.TempDir()
	kv := filepath.Join(dir, "kvharness")
	if err := os.WriteFile(kv, []byte(fakeKvharness), 0o755); err != nil {
		t.Fatal(err)
	}
	baseline := filepath.Join(dir, "baseline.txt")
	os.WriteFile(baseline, []byte("BenchmarkStore\n"), 0o644)
	for _, tc := range []struct {
		first, confirm string
		want           int
		rerun          bool
	}{
		{"0", "1", 0, false},
		{"1", "0", 0, true},
		{"1", "1", 1, true},
		{"2", "0", 2, false},
		{"1", "2", 2, true},
	} {
		out, log := filepath.Join(dir, "night-"+tc.first+tc.confirm), filepath.Join(dir, "log-"+tc.first+tc.confirm)
		cmd := exec.Command("bash", "nightly.sh", out)
		cmd.Env = append(os.Environ(), "KVHARNESS="+kv, "BASELINE="+baseline, "MATRIX=matrix-cpu.json", "LOG="+log,
			"FIRST_RC="+tc.first, "CONFIRM_RC="+tc.confirm)
		output, err := cmd.CombinedOutput()
		if cmd.ProcessState == nil {
			t.Fatalf("nightly.sh did not start: %v", err)
		}
		calls, _ := os.ReadFile(log)
		reran := strings.Contains(string(calls), "--out "+filepath.Join(out, "rerun"))
		if cmd.ProcessState.ExitCode() != tc.want || reran != tc.rerun {
			t.Errorf("compare exits %s then %s: nightly exit %d, reran %v; want %d, %v\ncalls:\n%s\noutput:\n%s",
				tc.first, tc.confirm, cmd.ProcessState.ExitCode(), reran, tc.want, tc.rerun, calls, output)
		}
		if tc.rerun && !strings.Contains(string(calls), "--confirm "+filepath.Join(out, "rerun", "bench.txt")) {
			t.Errorf("the confirming compare did not get the rerun's bench.txt:\n%s", calls)
		}
		for _, line := range strings.Split(strings.TrimSpace(string(calls)), "\n") {
			if line != "help" && !strings.Contains(line, "--strict") { // help: the script asks whether the binary serves plugins
				t.Errorf("nightly.sh called %q without --strict: a night without the data to judge it must not pass", line)
			}
		}
	}
}
