package main

import (
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/kvharness/kvharness/harness/plugin"
	"github.com/kvharness/kvharness/internal/testtier"
)

// TestSIGTERMStopsEveryCommand: check and repro, each with a plugin hung
// in a call under a 60 s deadline, mutants running the faulty
// plugin's variants, and a bench whose plugin hangs in its launch, stop within 2 s of SIGTERM
// (repro took 9.9 s), exit 130 and leave no run directory.
func TestSIGTERMStopsEveryCommand(t *testing.T) {
	testtier.FullOnly(t, "builds kvharness and sends SIGTERM to its commands with a hung plugin")
	bin := buildCLI(t)
	if _, err := plugin.Resolve("faulty"); err != nil { // built now, not inside the timed runs
		t.Fatal(err)
	}
	finding := filepath.Join("testdata", "gpu-finding", "bf16scatter-bf16-sink-padding-2139fc0f.json")
	for _, tc := range []struct {
		name string
		args []string
	}{
		{"check", []string{"check", "--plugin", "faulty", "--variant", "hang", "--timeout", "60s", "--backend", "cpu", "--layout", "bf16"}},
		{"repro", []string{"repro", finding, "--plugin", "faulty", "--variant", "hang", "--timeout", "60s", "--backend", "cpu"}},
		{"mutants", []string{"mutants", "--plugin", "faulty", "--backend", "cpu"}}, // its variants hang, crash and scribble
		{"bench", []string{"bench", "--plugin", "faulty", "--variant", "hang", "--layout", "bf16", "--tokens", "1", "--mode", "eager",
			"--cache", "hot", "--timing", "per-launch", "--quick", "--backend", "cpu", "--timeout", "60s", "--slots", "4096"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			runtime := shortTempDir(t)
			args := tc.args
			switch tc.name {
			case "check":
				args = append(args, "--results", t.TempDir())
			case "bench":
				args = append(args, "--out", filepath.Join(t.TempDir(), "night"))
			}
			cmd, stdout, stderr := startCLI(t, bin, runtime, args...)
			waitForRunDir(t, runtime)
			time.Sleep(time.Second) // the plugin is started and in its first calls
			sent := time.Now()
			cmd.Process.Signal(syscall.SIGTERM)
			cmd.Wait()
			took, code := time.Since(sent), cmd.ProcessState.ExitCode()
			t.Logf("exit %d after %v\nstdout:\n%s\nstderr:\n%s", code, took.Round(time.Millisecond), stdout, stderr)
			if took > 2*time.Second {
				t.Errorf("took %v to stop, want at most 2 s", took)
			}
			if code != exitInterrupted || !strings.Contains(stderr.String(), "interrupted (terminated)") {
				t.Errorf("exit %d, want %d and stderr saying it was terminated", code, exitInterrupted)
			}
			if runs, _ := filepath.Glob(filepath.Join(runtime, "*", "run-*")); len(runs) > 0 {
				t.Errorf("run directories left: %v", runs)
			}
		})
	}
}
