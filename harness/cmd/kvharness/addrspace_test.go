package main

import (
	"bytes"
	"fmt"
	"os/exec"
	"strings"
	"testing"

	"github.com/kvharness/kvharness/internal/testtier"
)

// TestAddressSpaceLimit: under ulimit -v, a limit too small for the Go
// runtimes of the harness and its plugins is refused before anything
// starts, and a pool that does not fit a larger one is a one-line error
// naming the limit, never "fatal error: out of memory" from a runtime;
// the control, a check that fits, passes under the same limit.
func TestAddressSpaceLimit(t *testing.T) {
	testtier.FullOnly(t, "builds kvharness and runs it under ulimit -v")
	bin := buildCLI(t)
	check := bin + " check --plugin fusedstore --backend cpu --layout bf16 --padding none --cases 20 --results " + t.TempDir()
	for _, tc := range []struct {
		name   string
		kib    int
		args   string
		code   int
		saying string
	}{
		{"too small for the runtimes", 1900 << 10, check, exitError, "the address-space limit (ulimit -v) is 1.9 GiB"},
		{"a pool past the limit", 3 << 20, check + " --slots 10000000", exitError, "the address-space limit, ulimit -v, is 3.0 GiB"},
		{"control: a pool that fits", 3 << 20, check + " --slots 65536", exitPass, ""}, // a default pool reaches past 4 GiB: sparse, but mapped whole
	} {
		t.Run(tc.name, func(t *testing.T) {
			cmd := exec.Command("sh", "-c", fmt.Sprintf("ulimit -v %d && exec %s", tc.kib, tc.args))
			var stdout, stderr bytes.Buffer
			cmd.Stdout, cmd.Stderr = &stdout, &stderr
			cmd.Run()
			code := cmd.ProcessState.ExitCode()
			t.Logf("exit %d\n%s%s", code, stdout.String(), stderr.String())
			if code != tc.code || !strings.Contains(stderr.String(), tc.saying) || strings.Contains(stderr.String(), "fatal error") {
				t.Errorf("exit %d; want %d saying %q, and no runtime crash", code, tc.code, tc.saying)
			}
			if tc.code == exitError && strings.Count(strings.TrimSpace(stderr.String()), "\n") > 0 {
				t.Errorf("want one line on stderr")
			}
		})
	}
}
