package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/kvharness/kvharness/harness/benchrun"
	"github.com/kvharness/kvharness/harness/results"
	"github.com/kvharness/kvharness/internal/testtier"
)

// tinyNight is a matrix small enough for CI: one plugin, one layout, hot
// per-launch cells on the CPU with short stopping rules, at the batch
// sizes tokens, passes times, in pools of 4096 slots (the default 1 Mi
// slots cost a second of staging a cell, and a hot cell touches few).
func tinyNight(tokens, passes string) []string {
	return []string{"bench", "--plugin", "fusedstore", "--layout", "bf16", "--tokens", tokens, "--slots", "4096",
		"--mode", "eager", "--cache", "hot", "--timing", "per-launch", "--quick", "--backend", "cpu", "--passes", passes}
}

// tinyBench is the tiny night at two batch sizes, two passes.
var tinyBench = tinyNight("1,32", "2")

// benchNight runs the tiny bench with the extra flags into a fresh --out
// folder and returns it; the test fails unless the bench passes.
func benchNight(t *testing.T, extra ...string) string {
	t.Helper()
	out := filepath.Join(t.TempDir(), "night")
	args := append(slices.Clone(tinyBench), extra...)
	code, stdout, stderr := runCLI(t, append(args, "--out", out)...)
	if code != exitPass {
		t.Fatalf("bench %s: exit %d\n%s\n%s", strings.Join(args[1:], " "), code, stdout, stderr)
	}
	return out
}

func runCLI(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var o, e bytes.Buffer
	code = run(context.Background(), &o, &e, args)
	return code, o.String(), e.String()
}

// readOut reads the output name of the --out folder out with read; the
// test fails on an error.
func readOut[T any](t *testing.T, out, name string, read func(path string) (T, error)) T {
	t.Helper()
	v, err := read(filepath.Join(out, name))
	if err != nil {
		t.Fatal(err)
	}
	return v
}

func readCells(t *testing.T, out string) []results.Cell {
	t.Helper()
	return readOut(t, out, benchrun.LogFile, results.ReadLogFile).Cells
}

func readRuns(t *testing.T, out string) []results.Run {
	t.Helper()
	return readOut(t, out, benchrun.JournalFile, results.ReadRunsFile).Runs
}

// TestBenchRunsAndResumes measures a tiny matrix in two passes, then
// resumes it: the resumed night measures nothing again, and a run of
// another plugin version left in the journal is kept out of the outputs.
func TestBenchRunsAndResumes(t *testing.T) {
	long(t)
	out := benchNight(t)
	cells := readCells(t, out)
	// Per batch size: the store and its copy roofline; one empty launch.
	if len(cells) != 5 {
		t.Fatalf("%d cells in the log, want 5 (2 stores, 2 copies, 1 empty): %v", len(cells), cells)
	}
	for _, c := range cells {
		if len(c.Runs) != 2 || c.Schema != results.CellSchema {
			t.Errorf("cell %s: %d runs, schema %q; want 2 runs of %s", c.Name(), len(c.Runs), c.Schema, results.CellSchema)
		}
	}
	if runs := readRuns(t, out); len(runs) != 10 {
		t.Errorf("%d runs in the journal, want 5 cells × 2 passes", len(runs))
	}
	for _, f := range []string{benchrun.BenchFile, benchrun.TableFile, benchrun.ManifestFile} {
		if b, err := os.ReadFile(filepath.Join(out, f)); err != nil || len(b) == 0 {
			t.Errorf("%s: %v, %d bytes", f, err, len(b))
		}
	}
	bench := readFile(t, filepath.Join(out, benchrun.BenchFile))
	if !strings.Contains(bench, "BenchmarkStore/plugin=fusedstore/layout=bf16") || !strings.Contains(bench, "copy-ratio") ||
		strings.Count(bench, "BenchmarkStore/") != 4 {
		t.Errorf("bench.txt lacks a line per run of the stores, or their copy ratio:\n%s", bench)
	}

	if code, _, stderr := runCLI(t, append(tinyBench, "--out", out)...); code != exitError || !strings.Contains(stderr, "--resume") {
		t.Errorf("rerun into a used --out: exit %d, stderr %q; want an error naming --resume", code, stderr)
	}

	runs := readRuns(t, out)
	stale := runs[len(runs)-1]
	stale.PluginVersion = "0.9.0"
	appendRun(t, out, stale)
	code, stdout, stderr := runCLI(t, append(tinyBench, "--out", out, "--resume")...)
	if code != exitPass {
		t.Fatalf("resume: exit %d\n%s\n%s", code, stdout, stderr)
	}
	if got := readRuns(t, out); len(got) != 11 {
		t.Errorf("after resume %d runs in the journal, want the 10 kept and the stale one (nothing measured again)", len(got))
	}
	if !strings.Contains(stderr, "1 runs of the earlier night") || !strings.Contains(stderr, "@0.9.0") {
		t.Errorf("resume did not warn about the other version's run:\n%s", stderr)
	}
	if !strings.Contains(stderr, "5 cells in") || len(readCells(t, out)) != 5 {
		t.Errorf("resume outputs do not hold exactly the 5 current cells:\n%s", stderr)
	}
}

// TestBenchShardsMergeToWhole: the three shards of a night, merged, are
// the cells of the unsharded night, in its order, with the same table
// rows; merge refuses a missing shard, a doubled one and one cut short.
func TestBenchShardsMergeToWhole(t *testing.T) {
	long(t)
	defer func(c string) { buildCommit = c }(buildCommit)
	buildCommit = "abc1234" // one build for every shard, whatever the worktree does meanwhile
	dir := t.TempDir()
	args := []string{"bench", "--plugin", "fusedstore", "--layout", "bf16,fp8-paged", "--tokens", "1,32", "--slots", "4096", "--mode", "eager",
		"--cache", "hot", "--timing", "per-launch", "--quick", "--backend", "cpu", "--passes", "2"}
	whole := filepath.Join(dir, "whole")
	if code, _, stderr := runCLI(t, append(args, "--out", whole)...); code != exitPass {
		t.Fatalf("unsharded: exit %d\n%s", code, stderr)
	}
	var shards []string
	for i := 1; i <= 3; i++ {
		out := filepath.Join(dir, fmt.Sprintf("shard-%d", i))
		if code, _, stderr := runCLI(t, append(args, "--shard", fmt.Sprintf("%d/3", i), "--out", out)...); code != exitPass {
			t.Fatalf("shard %d/3: exit %d\n%s", i, code, stderr)
		}
		shards = append(shards, out)
	}
	merged := filepath.Join(dir, "merged")
	code, stdout, stderr := runCLI(t, append([]string{"merge", "--out", merged}, shards...)...)
	if code != exitPass {
		t.Fatalf("merge: exit %d\n%s", code, stderr)
	}
	if got, want := cellKeys(readCells(t, merged)), cellKeys(readCells(t, whole)); !slices.Equal(got, want) {
		t.Errorf("merged cells differ from the unsharded night's:\n got %v\nwant %v", got, want)
	}
	if got, want := tableRows(stdout), tableRows(readFile(t, filepath.Join(whole, benchrun.TableFile))); !slices.Equal(got, want) {
		t.Errorf("merged table rows differ from the unsharded night's:\n got %v\nwant %v", got, want)
	}
	man, err := benchrun.ReadManifest(filepath.Join(merged, benchrun.ManifestFile))
	if err != nil || man.Shard != "1/1" || len(man.Merged) != 3 || len(man.Units) != 4 {
		t.Errorf("merged manifest %+v, %v; want the whole night of 4 units from 3 shards", man, err)
	}
	for name, tc := range map[string]struct {
		dirs []string
		want string
	}{
		"gap":     {shards[:2], "gap: shard 3/3 missing"},
		"overlap": {[]string{shards[0], shards[0], shards[1], shards[2]}, "overlap: shard 1/3 is both"},
		"other":   {[]string{shards[0], shards[1], whole}, "different nights"},
	} {
		if code, _, stderr := runCLI(t, append([]string{"merge", "--out", filepath.Join(dir, name)}, tc.dirs...)...); code != exitError || !strings.Contains(stderr, tc.want) {
			t.Errorf("merge %s: exit %d, %q; want an error saying %q", name, code, stderr, tc.want)
		}
	}
	cut := readFile(t, filepath.Join(shards[1], benchrun.LogFile))
	os.WriteFile(filepath.Join(shards[1], benchrun.LogFile), []byte(cut[strings.Index(cut, "\n")+1:]), 0o644)
	if code, _, stderr := runCLI(t, append([]string{"merge", "--out", filepath.Join(dir, "cut")}, shards...)...); code != exitError || !strings.Contains(stderr, "did not finish") {
		t.Errorf("merge of a shard cut short: exit %d, %q; want a gap named", code, stderr)
	}
}

func cellKeys(cells []results.Cell) []results.Key {
	var out []results.Key
	for _, c := range cells {
		out = append(out, c.Key())
	}
	return out
}

// tableRows are a text table's rows without their numbers: plugin,
// layout, tokens, mode, cache and timing.
func tableRows(table string) []string {
	var out []string
	for _, line := range strings.Split(table, "\n") {
		f := strings.Fields(line)
		if len(f) > 6 && (f[0] == "fusedstore" || f[0] == "bf16scatter") {
			out = append(out, strings.Join(f[:6], " "))
		}
	}
	return out
}

// TestBenchFormats: the table on stdout in markdown, CSV and JSON.
func TestBenchFormats(t *testing.T) {
	long(t)
	for _, tc := range []struct{ format, want string }{
		{"md", "| plugin | layout | tokens |"},
		{"csv", "name,kernel,plugin,plugin_version"},
		{"json", `"schema": "` + benchrun.SummarySchema + `"`},
	} {
		out := filepath.Join(t.TempDir(), tc.format)
		code, stdout, stderr := runCLI(t, append(tinyBench, "--format", tc.format, "--out", out)...)
		if code != exitPass || !strings.Contains(stdout, tc.want) || strings.Contains(stdout, "cells in") {
			t.Errorf("--format %s: exit %d, stdout %q (stderr %q); want %q and nothing else", tc.format, code, stdout, stderr, tc.want)
		}
	}
	if code, _, stderr := runCLI(t, append(tinyBench, "--format", "xml", "--out", filepath.Join(t.TempDir(), "x"))...); code != exitError || !strings.Contains(stderr, `--format "xml"`) {
		t.Errorf("--format xml: exit %d, %q", code, stderr)
	}
}

// TestBenchStrict: a cell that cannot take its minimum samples is an
// error under --strict and a warning without, naming the cell and the
// fix. The minimum is out of any machine's reach: 10^8 samples in a
// 0.05 s cell (at 10^5, the empty cell took 72,392 in one run and all it
// needed in another).
func TestBenchStrict(t *testing.T) {
	long(t)
	starve := append(slices.Clone(tinyBench), "--tokens", "32", "--min-samples", "100000000", "--max-time", "50ms")
	code, _, stderr := runCLI(t, append(starve, "--strict", "--out", filepath.Join(t.TempDir(), "s"))...)
	if code != exitError || !strings.Contains(stderr, "samples < min 100000000") || !strings.Contains(stderr, "raise --max-time") {
		t.Errorf("--strict with unreachable minimum samples: exit %d, %q", code, stderr)
	}
	code, _, stderr = runCLI(t, append(starve, "--out", filepath.Join(t.TempDir(), "w"))...)
	if code != exitPass || !strings.Contains(stderr, "warning: 3 cells lack") {
		t.Errorf("without --strict: exit %d, %q; want a warning", code, stderr)
	}
}

// TestBenchRotates: with --rotate the plugin's launches take the data sets
// in turn; every cell records the rotation, and bench.txt names it, so a
// rotating night never compares with one that repeats a single set.
func TestBenchRotates(t *testing.T) {
	long(t)
	out := benchNight(t, "--rotate", "3")
	cells := readCells(t, out)
	if len(cells) != 5 {
		t.Fatalf("%d cells, want 5", len(cells))
	}
	for _, c := range cells {
		if c.Rotate != 3 || !strings.Contains(c.Name(), "/cache=hot/rotate=3/") {
			t.Errorf("cell %s: rotate %d; want 3 in the cell and its name", c.Name(), c.Rotate)
		}
	}
	bench, _ := os.ReadFile(filepath.Join(out, benchrun.BenchFile))
	if !strings.Contains(string(bench), "BenchmarkStore/plugin=fusedstore/layout=bf16/head_dim=128/page_size=64/tokens=32/mode=eager/cache=hot/rotate=3/timing=per-launch") {
		t.Errorf("bench.txt does not name the rotation:\n%s", bench)
	}
	if table := readFile(t, filepath.Join(out, benchrun.TableFile)); !strings.Contains(table, "launches rotate over 3 pools") {
		t.Errorf("table.txt does not say the launches rotate:\n%s", table)
	}
	code, _, stderr := runCLI(t, append(tinyBench, "--rotate", "0", "--tokens", "1,32", "--out", filepath.Join(t.TempDir(), "x"))...)
	if code != exitPass {
		t.Errorf("--rotate 0 (one set): exit %d, %s", code, stderr)
	}
	code, _, stderr = runCLI(t, append(tinyBench, "--rotate", "65", "--out", filepath.Join(t.TempDir(), "y"))...)
	if code != exitError || !strings.Contains(stderr, "rotate 65") {
		t.Errorf("--rotate 65: exit %d, stderr %q; want an error naming it", code, stderr)
	}
}

// TestBenchSlotRuns: --slot-run draws page-aligned runs of slots; the
// cells record it and bench.txt names it.
func TestBenchSlotRuns(t *testing.T) {
	long(t)
	out := benchNight(t, "--slot-run", "16")
	if table := readFile(t, filepath.Join(out, benchrun.TableFile)); !strings.Contains(table, "slots in runs of 16") {
		t.Errorf("table.txt does not say how the slots were drawn:\n%s", table)
	}
	for _, c := range readCells(t, out) {
		if c.Kernel == "store" && (c.SlotRun != 16 || !strings.Contains(c.Name(), "/slot_run=16/")) {
			t.Errorf("cell %s: slot_run %d; want 16 in the cell and its name", c.Name(), c.SlotRun)
		}
	}
}

// TestBuildMatrixRotateAndRuns: a matrix file's rotate and slot_run hold
// unless the flags are given, and a given flag wins, even at 1.
func TestBuildMatrixRotateAndRuns(t *testing.T) {
	path := filepath.Join(t.TempDir(), "m.json")
	if err := os.WriteFile(path, []byte(`{"plugins": ["fusedstore"], "rotate": 4, "slot_run": 64}`), 0o644); err != nil {
		t.Fatal(err)
	}
	f := benchFlags{matrix: path, rotate: 1, slotRun: 1}
	m, err := f.buildMatrix(func(string) bool { return false }, nil)
	if err != nil || m.Rotate != 4 || m.SlotRun != 64 {
		t.Errorf("matrix alone: rotate %d, slot_run %d, %v; want 4 and 64", m.Rotate, m.SlotRun, err)
	}
	m, err = f.buildMatrix(func(name string) bool { return name == "rotate" || name == "slot-run" }, nil)
	if err != nil || m.Rotate != 1 || m.SlotRun != 1 {
		t.Errorf("--rotate 1 --slot-run 1 over the matrix: rotate %d, slot_run %d, %v; want 1 and 1", m.Rotate, m.SlotRun, err)
	}
}

func readFile(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func appendRun(t *testing.T, out string, r results.Run) {
	t.Helper()
	w, err := results.OpenLog(filepath.Join(out, benchrun.JournalFile))
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	if err := w.AppendRun(r); err != nil {
		t.Fatal(err)
	}
}

func TestBenchRefusesBadMatrices(t *testing.T) {
	dir := t.TempDir()
	typo := filepath.Join(dir, "typo.json")
	os.WriteFile(typo, []byte(`{"plugins": ["fusedstore"], "layouts": ["bf61"]}`), 0o644)
	for name, tc := range map[string]struct {
		args []string
		want string
	}{
		"layout typo": {[]string{"bench", "--matrix", typo}, `layout "bf61": unknown`},
		"cache typo":  {[]string{"bench", "--plugin", "fusedstore", "--cache", "hot,warm"}, `--cache "warm": want hot or cold`},
		"cold batched only": {[]string{"bench", "--plugin", "fusedstore", "--cache", "cold", "--timing", "batched"},
			"cold caches are timed per launch only"},
		"no store kernel": {[]string{"bench", "--plugin", "pdtransfer", "--tokens", "1", "--mode", "eager", "--cache", "hot",
			"--timing", "per-launch", "--quick", "--backend", "cpu"}, "has no store kernel"},
	} {
		t.Run(name, func(t *testing.T) {
			args := append(tc.args, "--out", filepath.Join(dir, strings.ReplaceAll(name, " ", "-")))
			code, _, stderr := runCLI(t, args...)
			if code != exitError || !strings.Contains(stderr, tc.want) {
				t.Errorf("exit %d, stderr %q; want exit %d mentioning %q", code, stderr, exitError, tc.want)
			}
		})
	}
}

// TestCommitMarksDirty: a night is credited to the commit it ran, marked
// dirty when tracked files differ from it.
func TestCommitMarksDirty(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("no git on this machine")
	}
	dir := t.TempDir()
	t.Chdir(dir)
	git := func(args ...string) {
		t.Helper()
		cmd := exec.Command("git", append([]string{"-c", "user.name=t", "-c", "user.email=t@t", "-c", "commit.gpgsign=false"}, args...)...)
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
	git("init", "-q")
	if err := os.WriteFile("kernel.cu", []byte("a"), 0o644); err != nil {
		t.Fatal(err)
	}
	git("add", "kernel.cu")
	git("commit", "-qm", "one")
	clean := commit()
	if clean == "" || strings.HasSuffix(clean, "-dirty") {
		t.Fatalf("commit() on a clean tree = %q", clean)
	}
	os.WriteFile("untracked.txt", []byte("x"), 0o644)
	if got := commit(); got != clean {
		t.Errorf("an untracked file made commit() %q; want %q", got, clean)
	}
	os.WriteFile("kernel.cu", []byte("b"), 0o644)
	if got := commit(); got != clean+"-dirty" {
		t.Errorf("commit() with a changed tracked file = %q; want %q", got, clean+"-dirty")
	}
}

// TestCompareConfirm: with --confirm, a regression fails the night only
// when the rerun shows it too.
func TestCompareConfirm(t *testing.T) {
	dir := t.TempDir()
	write := func(name string, ns float64) string {
		var b strings.Builder
		for i := range 10 {
			fmt.Fprintf(&b, "BenchmarkStore/plugin=p/tokens=4096 1 %.0f ns/op\n", ns+float64(i))
		}
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
			t.Fatal(err)
		}
		return path
	}
	base, slow, slowAgain, fine := write("base.txt", 1000), write("slow.txt", 2000), write("again.txt", 2000), write("fine.txt", 1000)
	if code, _, stderr := runCLI(t, "compare", base, slow); code != exitViolation {
		t.Fatalf("compare without --confirm: exit %d, want %d\n%s", code, exitViolation, stderr)
	}
	code, _, stderr := runCLI(t, "compare", "--confirm", slowAgain, base, slow)
	if code != exitViolation || !strings.Contains(stderr, "confirmed by the rerun") {
		t.Errorf("confirmed regression: exit %d, stderr %q; want %d and the rerun named", code, stderr, exitViolation)
	}
	code, stdout, _ := runCLI(t, "compare", "--confirm", fine, base, slow)
	if code != exitPass || !strings.Contains(stdout, "not slower in the rerun") || !strings.Contains(stdout, "rerun: "+fine) {
		t.Errorf("unconfirmed slower cell: exit %d; want %d, the cell unsure and the rerun named:\n%s", code, exitPass, stdout)
	}
	other := filepath.Join(dir, "other.txt")
	os.WriteFile(other, []byte(strings.ReplaceAll(readFile(t, slow), "tokens=4096", "tokens=4096/rotate=4")), 0o644)
	if code, _, stderr := runCLI(t, "compare", base, other); code != exitError || !strings.Contains(stderr, "no benchmark of") {
		t.Errorf("nights with no benchmark in common: exit %d, stderr %q; want %d naming the mismatch", code, stderr, exitError)
	}
	both := filepath.Join(dir, "both.txt")
	os.WriteFile(both, []byte(readFile(t, fine)+readFile(t, other)), 0o644)
	if code, stdout, _ := runCLI(t, "compare", "--strict", base, both); code != exitPass || !strings.Contains(stdout, "1 cells are new (no baseline yet)") {
		t.Errorf("a night with one benchmark more: exit %d, stdout %q; want %d and a note", code, stdout, exitPass)
	}
	if code, _, stderr := runCLI(t, "compare", "--strict", both, base); code != exitError || !strings.Contains(stderr, "missing from "+base) {
		t.Errorf("a night with one benchmark fewer, --strict: exit %d, stderr %q; want %d naming the missing cell", code, stderr, exitError)
	}
	if code, _, stderr := runCLI(t, "compare", "--confirm", filepath.Join(dir, "nope.txt"), base, slow); code != exitError || !strings.Contains(stderr, "--confirm") {
		t.Errorf("missing rerun file: exit %d, stderr %q; want %d naming --confirm", code, stderr, exitError)
	}
}

// TestBenchResumeRefusesAnotherMachine: a night measured on another
// device or at another commit is not resumed here, whether its manifest
// says so (a finished night) or its journal's GPU runs do (an interrupted
// one): its runs would be credited to this machine and build.
func TestBenchResumeRefusesAnotherMachine(t *testing.T) {
	testtier.FullOnly(t, "three tiny nights, 5 s")
	out := benchNight(t)
	if code, _, errOut := runCLI(t, append(slices.Clone(tinyBench), "--out", out, "--resume")...); code != exitPass {
		t.Fatalf("resuming a night where it ran: exit %d: %s", code, errOut)
	}
	manPath := filepath.Join(out, benchrun.ManifestFile)
	man, err := benchrun.ReadManifest(manPath)
	if err != nil {
		t.Fatal(err)
	}
	man.Device, man.Commit = "NVIDIA H200", "f534aaf"
	if err := benchrun.WriteManifest(manPath, man); err != nil {
		t.Fatal(err)
	}
	code, _, errOut := runCLI(t, append(slices.Clone(tinyBench), "--out", out, "--resume")...)
	if code != exitError || !strings.Contains(errOut, "measured on NVIDIA H200 at commit f534aaf") || strings.Count(errOut, "\n") != 1 {
		t.Errorf("resuming an H200 night here: exit %d, stderr %q; want exit %d naming the night's device and commit", code, errOut, exitError)
	}
	// An interrupted night: no manifest, a journal of GPU runs.
	if err := os.Remove(manPath); err != nil {
		t.Fatal(err)
	}
	journal := filepath.Join(out, benchrun.JournalFile)
	data, err := os.ReadFile(journal)
	if err != nil {
		t.Fatal(err)
	}
	data = bytes.ReplaceAll(data, []byte(`"device":"cpu"`), []byte(`"device":"NVIDIA H200"`))
	if err := os.WriteFile(journal, data, 0o644); err != nil {
		t.Fatal(err)
	}
	code, _, errOut = runCLI(t, append(slices.Clone(tinyBench), "--out", out, "--resume")...)
	if code != exitError || !strings.Contains(errOut, "its runs were measured on NVIDIA H200") {
		t.Errorf("resuming an interrupted H200 night here: exit %d, stderr %q; want exit %d naming the runs' device", code, errOut, exitError)
	}
}
