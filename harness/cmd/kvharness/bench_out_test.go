package main

import (
	"bytes"
	"context"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/kvharness/kvharness/harness/arena/shm"
	"github.com/kvharness/kvharness/harness/benchrun"
	"github.com/kvharness/kvharness/harness/internal/linktest"
	"github.com/kvharness/kvharness/harness/plugin"
)

// tinyOne is the tiny night at one batch size and one pass: the quickest
// night that writes every output.
var tinyOne = tinyNight("1", "1")

// TestBenchRefusesLinkedOutputs: an output of --out that is a symbolic
// link (the journal, the cells, the plots folder) is refused before
// anything runs, naming it, and the file it names is left as it was.
func TestBenchRefusesLinkedOutputs(t *testing.T) {
	for _, name := range []string{benchrun.JournalFile, benchrun.LogFile, benchrun.BenchFile, benchrun.PlotDir} {
		out, victim := linktest.Out(t, name)
		code, stdout, stderr := runCLI(t, append(tinyOne, "--out", out)...)
		if code != exitError || !strings.Contains(stderr, filepath.Join(out, name)+" is a symbolic link") || stdout != "" {
			t.Errorf("%s a link: exit %d, stderr %q; want 2 naming the link", name, code, stderr)
		}
		if b, _ := os.ReadFile(victim); string(b) != linktest.Kept {
			t.Errorf("%s a link: the file it names now holds %q", name, b)
		}
		code, _, stderr = runCLI(t, append(tinyOne, "--out", out, "--resume")...)
		if code != exitError || !strings.Contains(stderr, "is a symbolic link") {
			t.Errorf("%s a link, --resume: exit %d, %q; want it refused", name, code, stderr)
		}
	}
}

// TestBenchLocksOut: while another process holds --out, bench exits 2
// naming the folder and writes nothing there; once it lets go, bench
// runs.
func TestBenchLocksOut(t *testing.T) {
	quick(t)
	out := filepath.Join(t.TempDir(), "night")
	held, err := benchrun.OpenOut(out)
	if err != nil {
		t.Fatal(err)
	}
	code, stdout, stderr := runCLI(t, append(tinyOne, "--out", out)...)
	if code != exitError || !strings.Contains(stderr, "--out "+out+" is in use by another kvharness bench") || stdout != "" {
		t.Errorf("a held --out: exit %d, stderr %q; want 2 naming the folder", code, stderr)
	}
	if code, _, stderr := runCLI(t, "merge", "--out", out, out); code != exitError {
		t.Errorf("merge into a held --out: exit %d, %q", code, stderr)
	}
	if entries, _ := os.ReadDir(out); len(entries) > 0 {
		t.Errorf("the refused bench left %v in the folder", entries)
	}
	held.Close()
	if code, _, stderr := runCLI(t, append(tinyOne, "--out", out)...); code != exitPass {
		t.Errorf("after release: exit %d\n%s", code, stderr)
	}
}

// TestBenchErrorLeavesNoNight: a run refused at its plan (an arena past
// the bound) or failing before it measured anything (a plugin that
// panics in its first launch) leaves no journal and no folder, so that
// the next plain run is not told to --resume; a folder that was there
// stays, empty.
func TestBenchErrorLeavesNoNight(t *testing.T) {
	quick(t)
	dir := t.TempDir()
	out := filepath.Join(dir, "night")
	huge := append(slices.Clone(tinyOne), "--slots", "400000000", "--out", out)
	code, _, stderr := runCLI(t, huge...)
	if code != exitError || !strings.Contains(stderr, "400000000 slots") || !strings.Contains(stderr, "--slots") || strings.Count(stderr, "\n") != 1 {
		t.Errorf("an arena past the bound: exit %d, stderr %q; want 2, one line naming --slots", code, stderr)
	}
	if _, err := os.Stat(out); !os.IsNotExist(err) {
		t.Errorf("the refused run left its folder: %v", err)
	}
	panics := []string{"bench", "--plugin", "faulty", "--variant", "panic", "--layout", "bf16", "--tokens", "1", "--slots", "4096", "--mode", "eager",
		"--cache", "hot", "--timing", "per-launch", "--quick", "--backend", "cpu", "--passes", "1", "--out", out}
	for _, made := range []bool{false, true} {
		if made {
			os.Mkdir(out, 0o755)
		}
		code, _, stderr := runCLI(t, panics...)
		if code != exitError || !strings.Contains(stderr, "crash during Bench") {
			t.Errorf("a plugin that panics: exit %d, stderr %q; want 2 naming the crash", code, stderr)
		}
		entries, err := os.ReadDir(out)
		switch {
		case !made && !os.IsNotExist(err):
			t.Errorf("the failed run left the folder it made: %v %v", entries, err)
		case made && (err != nil || len(entries) > 0):
			t.Errorf("the failed run left %v (%v) in a folder that was there", entries, err)
		}
	}
	if code, _, stderr := runCLI(t, append(tinyOne, "--out", out)...); code != exitPass {
		t.Errorf("the next plain run: exit %d\n%s", code, stderr)
	}
}

// TestBenchResourceError: an arena that does not fit where it must live
// is said as check says it, naming --slots and what fits, not as a run
// error of the plugin's.
func TestBenchResourceError(t *testing.T) {
	var stdout, stderr bytes.Buffer
	e := &env{stdout: &stdout, stderr: &stderr}
	f := &benchFlags{out: t.TempDir()}
	man := benchrun.Manifest{Matrix: benchrun.Matrix{Slots: 1 << 20}}
	runErr := fmt.Errorf("fusedstore bf16 pass 1: arena of 512 MiB: %w", &shm.SpaceError{Need: 512 << 20, Free: 64 << 20, Dir: "/dev/shm"})
	code := benchFinish(context.Background(), e, f, benchrun.Text, &benchrun.Night{}, man, runErr)
	line := stderr.String()
	if code != exitError || !strings.HasPrefix(line, "kvharness: --slots 1048576: ") || !strings.Contains(line, "does not fit in /dev/shm") ||
		!strings.Contains(line, "(--slots 117964 fits)") || strings.Contains(line, "--resume") {
		t.Errorf("exit %d, %q; want 2 and one line naming --slots, the folder and what fits", code, line)
	}
}

// TestBenchRemovesLeftovers: the temporary files a killed bench left in
// --out, beside its outputs and in its plots, are gone after the next
// run into it.
func TestBenchRemovesLeftovers(t *testing.T) {
	quick(t)
	out := filepath.Join(t.TempDir(), "night")
	os.MkdirAll(filepath.Join(out, benchrun.PlotDir), 0o755)
	left := []string{".bench.txt.tmp123456", ".cells.jsonl.tmp9", filepath.Join(benchrun.PlotDir, ".throughput_x.png.tmp4")}
	for _, f := range left {
		os.WriteFile(filepath.Join(out, f), []byte("partial"), 0o644)
	}
	if code, _, stderr := runCLI(t, append(tinyOne, "--out", out)...); code != exitPass {
		t.Fatalf("exit %d\n%s", code, stderr)
	}
	for _, f := range left {
		if _, err := os.Stat(filepath.Join(out, f)); !os.IsNotExist(err) {
			t.Errorf("%s is still there", f)
		}
	}
}

// TestBenchPinsPlugins: --plugin-sha256 pins a bench's plugins as it pins
// check's: the right sum runs, a wrong one is refused before anything is
// measured; a bare sum needs a matrix of one plugin, a named one a plugin
// of the matrix.
func TestBenchPinsPlugins(t *testing.T) {
	quick(t)
	spec, err := plugin.ResolveSpec("fusedstore")
	if err != nil {
		t.Fatal(err)
	}
	sum, err := plugin.FileSHA256(spec.Argv[0])
	if err != nil {
		t.Fatal(err)
	}
	good, bad := hex.EncodeToString(sum), strings.Repeat("0", 64)
	dir := t.TempDir()
	for _, tc := range []struct {
		name string
		args []string
		code int
		want string
	}{
		{"right", []string{"--plugin-sha256", good}, exitPass, ""},
		{"right, named", []string{"--plugin-sha256", "fusedstore=" + good}, exitPass, ""},
		{"wrong", []string{"--plugin-sha256", bad}, exitError, "pinned " + bad[:8]},
		{"bare with two", []string{"--plugin", "bf16scatter", "--plugin-sha256", good}, exitError, "write NAME=SHA256 for each plugin"},
		{"not in the matrix", []string{"--plugin-sha256", "fp8store=" + good}, exitError, `"fp8store" is not a plugin of this matrix`},
		{"not hex", []string{"--plugin-sha256", "xyz"}, exitError, `--plugin-sha256 "xyz": want 64 hex digits`},
	} {
		out := filepath.Join(dir, strings.ReplaceAll(tc.name, " ", "-"))
		code, _, stderr := runCLI(t, append(append(slices.Clone(tinyOne), tc.args...), "--out", out)...)
		if code != tc.code || !strings.Contains(stderr, tc.want) {
			t.Errorf("%s: exit %d, stderr %q; want %d and %q", tc.name, code, stderr, tc.code, tc.want)
		}
		if _, err := os.Stat(out); tc.code != exitPass && !os.IsNotExist(err) {
			t.Errorf("%s: the refused run made its folder", tc.name)
		}
	}
}
