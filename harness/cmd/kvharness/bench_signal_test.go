package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/kvharness/kvharness/harness/benchrun"
	"github.com/kvharness/kvharness/harness/plugin"
	"github.com/kvharness/kvharness/internal/testtier"
)

// TestBenchCtrlC: SIGINT in the middle of a night stops it within 2 s
// with exit 130, says it was interrupted, reports the cells finished so
// far (the table on stdout), keeps every finished run in the journal and
// leaves no run directory; --resume then finishes
// the night without measuring a kept run again. A plugin hung in its
// launch (a 60 s call deadline) stops as fast, and so does a night
// staging its arena; neither leaves a folder.
//
// A night stops in 0.2–0.6 s on an idle machine; the bound leaves room for
// a CI machine under load (check's 2 s bar is TestCtrlCWithHungPlugin's).
func TestBenchCtrlC(t *testing.T) {
	testtier.FullOnly(t, "builds kvharness and interrupts its bench")
	bin := buildCLI(t)
	for _, name := range []string{"fusedstore", "faulty"} { // built now, not inside the timed runs
		if _, err := plugin.Resolve(name); err != nil {
			t.Fatal(err)
		}
	}
	night := []string{"bench", "--plugin", "fusedstore", "--layout", "bf16", "--tokens", "1,32", "--mode", "eager",
		"--cache", "hot", "--timing", "per-launch", "--quick", "--backend", "cpu", "--passes", "4"}
	out := filepath.Join(t.TempDir(), "night")
	runtime := shortTempDir(t)
	cmd, stdout, stderr := startCLI(t, bin, runtime, append(night, "--out", out)...)
	waitFor(t, func() bool { return countLines(filepath.Join(out, benchrun.JournalFile)) >= 6 }) // into the second pass
	took, code := interrupt(t, cmd)
	t.Logf("exit %d after %v\nstdout:\n%s\nstderr:\n%s", code, took.Round(time.Millisecond), stdout, stderr)
	kept := countLines(filepath.Join(out, benchrun.JournalFile))
	switch {
	case took > benchStopBound:
		t.Errorf("took %v to stop, want at most %v", took, benchStopBound)
	case code != exitInterrupted:
		t.Errorf("exit %d, want %d", code, exitInterrupted)
	case !strings.Contains(stderr.String(), "kvharness: interrupted:") || !strings.Contains(stderr.String(), "rerun with --resume"):
		t.Errorf("stderr does not say interrupted and how to go on")
	case !strings.Contains(stdout.String(), "fusedstore") || kept < 6:
		t.Errorf("the finished cells are not reported (%d runs kept)", kept)
	}
	if runs, _ := filepath.Glob(filepath.Join(runtime, "*", "run-*")); len(runs) > 0 {
		t.Errorf("run directories left: %v", runs)
	}
	if _, err := os.Stat(filepath.Join(out, benchrun.LogFile)); !os.IsNotExist(err) {
		t.Errorf("an interrupted night wrote %s: %v; its files are the finished night's", benchrun.LogFile, err)
	}
	if code, _, stderr := runCLI(t, append(night, "--out", out, "--resume")...); code != exitPass {
		t.Fatalf("--resume: exit %d\n%s", code, stderr)
	}
	if n := countLines(filepath.Join(out, benchrun.JournalFile)); n != 5*4 {
		t.Errorf("after --resume %d runs in the journal, want 5 cells × 4 passes (the %d kept ones not measured again)", n, kept)
	}

	// A plugin hung in its first launch (a small pool: staged at once),
	// and a night stopped while it stages a pool of a million slots
	// (seconds of memory fill on a busy CPU).
	for _, tc := range []struct {
		name  string
		slots string
		wait  time.Duration
	}{{"hung", "4096", time.Second}, {"staging", "1048576", 300 * time.Millisecond}} {
		folder := filepath.Join(t.TempDir(), tc.name)
		cmd, _, stderr := startCLI(t, bin, runtime, "bench", "--plugin", "faulty", "--variant", "hang", "--layout", "bf16", "--tokens", "1",
			"--mode", "eager", "--cache", "hot", "--timing", "per-launch", "--quick", "--backend", "cpu", "--timeout", "60s",
			"--slots", tc.slots, "--out", folder)
		waitForRunDir(t, runtime)
		time.Sleep(tc.wait)
		took, code := interrupt(t, cmd)
		t.Logf("%s: exit %d after %v\nstderr:\n%s", tc.name, code, took.Round(time.Millisecond), stderr)
		if took > benchStopBound || code != exitInterrupted || !strings.Contains(stderr.String(), "interrupted before any run finished") {
			t.Errorf("%s: exit %d after %v; want %d within %v, saying nothing was measured", tc.name, code, took, exitInterrupted, benchStopBound)
		}
		if _, err := os.Stat(folder); !os.IsNotExist(err) {
			t.Errorf("%s: a night interrupted before any run left its folder: %v", tc.name, err)
		}
		if runs, _ := filepath.Glob(filepath.Join(runtime, "*", "run-*")); len(runs) > 0 {
			t.Errorf("%s: run directories left: %v", tc.name, runs)
		}
	}
}

// benchStopBound is how long an interrupted bench may take to exit.
const benchStopBound = 5 * time.Second

func shortTempDir(t *testing.T) string {
	dir, err := os.MkdirTemp("", "kvh") // short: socket paths must fit 108 bytes
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	return dir
}

func startCLI(t *testing.T, bin, runtime string, args ...string) (*exec.Cmd, *bytes.Buffer, *bytes.Buffer) {
	cmd := exec.Command(bin, args...)
	cmd.Env = append(os.Environ(), "KVHARNESS_RUNTIME_DIR="+runtime)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill() })
	return cmd, &stdout, &stderr
}

// interrupt sends SIGINT and waits: how long the command took to exit,
// and its status.
func interrupt(t *testing.T, cmd *exec.Cmd) (time.Duration, int) {
	sent := time.Now()
	cmd.Process.Signal(syscall.SIGINT)
	cmd.Wait()
	return time.Since(sent), cmd.ProcessState.ExitCode()
}

func waitFor(t *testing.T, ok func() bool) {
	deadline := time.Now().Add(3 * time.Minute)
	for !ok() {
		if time.Now().After(deadline) {
			t.Fatal("gave up waiting")
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func countLines(path string) int {
	b, _ := os.ReadFile(path)
	return bytes.Count(b, []byte("\n"))
}
