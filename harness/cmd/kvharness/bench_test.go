package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kvharness/kvharness/harness/benchrun"
	"github.com/kvharness/kvharness/harness/results"
)

// tinyBench is a matrix small enough for CI: one plugin, one layout, two
// batch sizes, hot per-launch cells on the CPU with short stopping rules.
var tinyBench = []string{"bench", "--plugin", "fusedstore", "--layout", "bf16", "--tokens", "1,32",
	"--mode", "eager", "--cache", "hot", "--timing", "per-launch", "--quick", "--backend", "cpu"}

func runCLI(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var o, e bytes.Buffer
	code = run(context.Background(), &o, &e, args)
	return code, o.String(), e.String()
}

func readCells(t *testing.T, out string) []results.Cell {
	t.Helper()
	l, err := results.ReadLogFile(filepath.Join(out, benchrun.LogFile))
	if err != nil {
		t.Fatal(err)
	}
	return l.Cells
}

// TestBenchRunsAndResumes measures a tiny matrix, then resumes it: the
// resumed run measures nothing again, and a cell of another plugin version
// left in the log is kept out of the outputs.
func TestBenchRunsAndResumes(t *testing.T) {
	out := filepath.Join(t.TempDir(), "night")
	code, stdout, stderr := runCLI(t, append(tinyBench, "--out", out)...)
	if code != exitPass {
		t.Fatalf("bench: exit %d\n%s\n%s", code, stdout, stderr)
	}
	cells := readCells(t, out)
	// Per batch size: the store and its copy roofline; one empty launch.
	if len(cells) != 5 {
		t.Fatalf("%d cells in the log, want 5 (2 stores, 2 copies, 1 empty): %v", len(cells), cells)
	}
	for _, f := range []string{benchrun.BenchFile, benchrun.TableFile} {
		if b, err := os.ReadFile(filepath.Join(out, f)); err != nil || len(b) == 0 {
			t.Errorf("%s: %v, %d bytes", f, err, len(b))
		}
	}
	bench, _ := os.ReadFile(filepath.Join(out, benchrun.BenchFile))
	if !strings.Contains(string(bench), "BenchmarkStore/plugin=fusedstore/layout=bf16") || !strings.Contains(string(bench), "copy-ratio") {
		t.Errorf("bench.txt lacks the store rows or their copy ratio:\n%s", bench)
	}

	if code, _, stderr := runCLI(t, append(tinyBench, "--out", out)...); code != exitError || !strings.Contains(stderr, "--resume") {
		t.Errorf("rerun into a used --out: exit %d, stderr %q; want an error naming --resume", code, stderr)
	}

	stale := cells[len(cells)-1]
	stale.PluginVersion = "0.9.0"
	appendCell(t, out, stale)
	code, stdout, stderr = runCLI(t, append(tinyBench, "--out", out, "--resume")...)
	if code != exitPass {
		t.Fatalf("resume: exit %d\n%s\n%s", code, stdout, stderr)
	}
	if got := readCells(t, out); len(got) != 6 {
		t.Errorf("after resume %d cells in the log, want the 5 kept and the stale one (nothing measured again)", len(got))
	}
	if !strings.Contains(stderr, "1 cells of the earlier run") || !strings.Contains(stderr, "@0.9.0") {
		t.Errorf("resume did not warn about the other version's cell:\n%s", stderr)
	}
	if !strings.Contains(stdout, "5 cells in") {
		t.Errorf("resume outputs do not hold exactly the 5 current cells:\n%s", stdout)
	}
}

// TestBenchRotates: with --rotate the plugin's launches take the data sets
// in turn; every cell records the rotation, and bench.txt names it, so a
// rotating night never compares with one that repeats a single set.
func TestBenchRotates(t *testing.T) {
	out := filepath.Join(t.TempDir(), "rotated")
	code, stdout, stderr := runCLI(t, append(tinyBench, "--rotate", "3", "--out", out)...)
	if code != exitPass {
		t.Fatalf("bench --rotate 3: exit %d\n%s\n%s", code, stdout, stderr)
	}
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
	code, _, stderr = runCLI(t, append(tinyBench, "--rotate", "0", "--tokens", "1,32", "--out", filepath.Join(t.TempDir(), "x"))...)
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
	out := filepath.Join(t.TempDir(), "pages")
	code, stdout, stderr := runCLI(t, append(tinyBench, "--slot-run", "16", "--out", out)...)
	if code != exitPass {
		t.Fatalf("bench --slot-run 16: exit %d\n%s\n%s", code, stdout, stderr)
	}
	if table := readFile(t, filepath.Join(out, benchrun.TableFile)); !strings.Contains(table, "slots in runs of 16") {
		t.Errorf("table.txt does not say how the slots were drawn:\n%s", table)
	}
	for _, c := range readCells(t, out) {
		if c.Kernel == benchrun.KernelStore && (c.SlotRun != 16 || !strings.Contains(c.Name(), "/slot_run=16/")) {
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
	m, err := f.buildMatrix(func(string) bool { return false })
	if err != nil || m.Rotate != 4 || m.SlotRun != 64 {
		t.Errorf("matrix alone: rotate %d, slot_run %d, %v; want 4 and 64", m.Rotate, m.SlotRun, err)
	}
	m, err = f.buildMatrix(func(name string) bool { return name == "rotate" || name == "slot-run" })
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

func appendCell(t *testing.T, out string, c results.Cell) {
	t.Helper()
	w, err := results.OpenLog(filepath.Join(out, benchrun.LogFile))
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	if err := w.Append(c); err != nil {
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
	if code != exitPass || !strings.Contains(stdout, "unconfirmed") || !strings.Contains(stdout, "rerun: "+fine) {
		t.Errorf("unconfirmed regression: exit %d; want %d, the row unconfirmed and the rerun named:\n%s", code, exitPass, stdout)
	}
	other := filepath.Join(dir, "other.txt")
	os.WriteFile(other, []byte(strings.ReplaceAll(readFile(t, slow), "tokens=4096", "tokens=4096/rotate=4")), 0o644)
	if code, _, stderr := runCLI(t, "compare", base, other); code != exitError || !strings.Contains(stderr, "no benchmark of") {
		t.Errorf("nights with no benchmark in common: exit %d, stderr %q; want %d naming the mismatch", code, stderr, exitError)
	}
	both := filepath.Join(dir, "both.txt")
	os.WriteFile(both, []byte(readFile(t, fine)+readFile(t, other)), 0o644)
	if code, _, stderr := runCLI(t, "compare", base, both); code != exitPass || !strings.Contains(stderr, "1 rows are in one file only") {
		t.Errorf("a night with one benchmark more: exit %d, stderr %q; want %d and a warning", code, stderr, exitPass)
	}
	if code, _, stderr := runCLI(t, "compare", "--confirm", filepath.Join(dir, "nope.txt"), base, slow); code != exitError || !strings.Contains(stderr, "--confirm") {
		t.Errorf("missing rerun file: exit %d, stderr %q; want %d naming --confirm", code, stderr, exitError)
	}
}
