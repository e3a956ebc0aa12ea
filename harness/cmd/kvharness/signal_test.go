package main

import (
	"bytes"
	"context"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/kvharness/kvharness/harness/plugin"
	"github.com/kvharness/kvharness/harness/property"
	"github.com/kvharness/kvharness/internal/testtier"
)

// buildCLI builds the kvharness binary for tests that signal a real
// process.
func buildCLI(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "kvharness")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("build: %v\n%s", err, out)
	}
	return bin
}

// TestCtrlCWithHungPlugin: a check whose plugin hangs in a store, with a
// 60 s call deadline, stops within 2 s of SIGINT or SIGHUP, says it was
// interrupted, exits 130 and leaves no run directory and no plugin behind.
// A second SIGINT exits at once.
func TestCtrlCWithHungPlugin(t *testing.T) {
	testtier.FullOnly(t, "builds kvharness and signals it with a hung plugin")
	bin := buildCLI(t)
	if _, err := plugin.Resolve("faulty"); err != nil { // built now, not inside the timed runs
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		sigs []syscall.Signal
	}{
		{"SIGINT", []syscall.Signal{syscall.SIGINT}},
		{"SIGHUP", []syscall.Signal{syscall.SIGHUP}},
		{"SIGINT twice", []syscall.Signal{syscall.SIGINT, syscall.SIGINT}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			runtime := shortTempDir(t)
			cmd, stdout, stderr := startCLI(t, bin, runtime, "check", "--plugin", "faulty", "--variant", "hang", "--timeout", "60s",
				"--backend", "cpu", "--layout", "bf16", "--results", t.TempDir())
			waitForRunDir(t, runtime)
			time.Sleep(time.Second) // the plugin is started and hung in its first store
			sent := time.Now()
			for _, s := range tc.sigs {
				cmd.Process.Signal(s)
				time.Sleep(300 * time.Millisecond)
			}
			err := cmd.Wait()
			took := time.Since(sent)
			code := cmd.ProcessState.ExitCode()
			t.Logf("%s: exit %d after %v\nstdout:\n%s\nstderr:\n%s", tc.name, code, took.Round(time.Millisecond), stdout.String(), stderr.String())
			if took > 2*time.Second {
				t.Errorf("took %v to stop, want at most 2 s", took)
			}
			if code != exitInterrupted {
				t.Errorf("exit %d (%v), want %d", code, err, exitInterrupted)
			}
			if !strings.Contains(stderr.String(), "interrupted") {
				t.Errorf("stderr does not say interrupted")
			}
			if runs, _ := filepath.Glob(filepath.Join(runtime, "*", "run-*")); len(runs) > 0 {
				t.Errorf("run directories left: %v", runs)
			}
		})
	}
}

func waitForRunDir(t *testing.T, runtime string) {
	deadline := time.Now().Add(2 * time.Minute) // the first run may build the plugin
	for time.Now().Before(deadline) {
		if runs, _ := filepath.Glob(filepath.Join(runtime, "*", "run-*", "pgids")); len(runs) > 0 {
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatal("the plugin never started")
}

// stopAfterRow cancels a run as an interrupt does once the first row has
// finished.
type stopAfterRow struct {
	cancel context.CancelCauseFunc
}

func (s stopAfterRow) Started(int, int)          {}
func (s stopAfterRow) Checked()                  {}
func (s stopAfterRow) Finished(property.RowDone) { s.cancel(errInterrupted) }

// TestInterruptReportsFinishedRows: rows that finished before an interrupt
// are reported as finished, the row in flight as stopped, and the exit is
// 130, not a plugin fault.
func TestInterruptReportsFinishedRows(t *testing.T) {
	long(t)
	ctx, cancel := context.WithCancelCause(context.Background())
	defer cancel(nil)
	ctx = property.WithObserver(ctx, stopAfterRow{cancel})
	var stdout, stderr bytes.Buffer
	code := run(ctx, &stdout, &stderr, []string{"check", "--plugin", "fusedstore", "--layout", "bf16", "--cases", "3000",
		"--backend", "cpu", "--results", t.TempDir()})
	out := stdout.String()
	if code != exitInterrupted {
		t.Errorf("exit %d, want %d\n%s%s", code, exitInterrupted, out, stderr.String())
	}
	if !regexp.MustCompile(`bf16\s+(D=\d+ P=\d+\s+)?none\s+3000\s+ok`).MatchString(out) || !strings.Contains(out, "stopped") || strings.Contains(out, "FAULT") {
		t.Errorf("want the first row finished (ok), the next stopped, no FAULT:\n%s", out)
	}
	if !strings.Contains(stderr.String(), "interrupted: 1 rows finished") {
		t.Errorf("stderr: %s", stderr.String())
	}
}
