package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/kvharness/kvharness/harness/cuda"
	"github.com/kvharness/kvharness/harness/plugin"
	"github.com/kvharness/kvharness/harness/report"
)

// gpuFinding is a repro file of the incident as a GPU run finds it:
// bf16scatter's sink padding, captured in a CUDA graph and replayed on
// cuda. Its case and bytes are those the CPU check finds (the minimal
// case C=1 n=0 loc=[0] is the same on both); its record of how it ran is
// written as check --backend cuda --graph writes it, so that the CPU
// machine has a GPU finding to refuse. TestGPUFindingReplaysAsItRan makes
// a real one on the GPU machine (and leaves it in $OUT).
const gpuFinding = "testdata/gpu-finding/bf16scatter-bf16-sink-padding-2139fc0f.json"

// cli runs kvharness with args and returns its exit status, stdout and
// stderr.
func cli(args ...string) (int, string, string) {
	var stdout, stderr bytes.Buffer
	code := run(context.Background(), &stdout, &stderr, args)
	return code, stdout.String(), stderr.String()
}

// TestGPUFindingOnThisMachine: a repro file found on cuda with graph
// replay replays the way it ran. Without a GPU, repro refuses it in one
// line that names the flag to override; --backend cpu replays its bytes
// on the host and its first line says what that cannot show. With a GPU,
// it replays on the GPU with graph replay and fails again.
func TestGPUFindingOnThisMachine(t *testing.T) {
	if cuda.Available() == nil {
		code, out, errOut := cli("repro", gpuFinding)
		if code != exitViolation || !strings.HasPrefix(out, "replaying on cuda (") || !strings.Contains(firstLine(out), "with graph replay") {
			t.Fatalf("repro of a GPU finding on a GPU: exit %d, want 1 on cuda with graph replay\nstdout:\n%s\nstderr:\n%s", code, out, errOut)
		}
		return
	}
	code, out, errOut := cli("repro", gpuFinding)
	if code != exitError || out != "" || strings.Count(errOut, "\n") != 1 {
		t.Fatalf("repro of a GPU finding without a GPU: exit %d, stdout %q, stderr %q; want exit 2 and one line on stderr", code, out, errOut)
	}
	for _, want := range []string{gpuFinding + " was found on cuda (NVIDIA H100 80GB HBM3, device 0) with graph replay",
		"no usable GPU", "give --backend cpu", "graph-replay and device-ordering bugs cannot show"} {
		if !strings.Contains(errOut, want) {
			t.Errorf("the refusal does not say %q:\n%s", want, errOut)
		}
	}
	code, out, errOut = cli("repro", gpuFinding, "--backend", "cpu")
	if code != exitViolation {
		t.Fatalf("repro --backend cpu: exit %d, want 1 (the bytes fail on the host too)\nstdout:\n%s\nstderr:\n%s", code, out, errOut)
	}
	want := "replaying on cpu, not as found (on cuda (NVIDIA H100 80GB HBM3, device 0) with graph replay): the case's bytes on the host, " +
		"where graph-replay and device-ordering bugs cannot show; a pass here proves nothing about them"
	if got := firstLine(out); got != want {
		t.Errorf("repro --backend cpu's first line:\n  %s\nwant\n  %s", got, want)
	}
	if !strings.Contains(out, "FAIL bf16scatter · bf16 · padding sink · property padding") {
		t.Errorf("repro --backend cpu does not report the padding failure:\n%s", out)
	}
	if code, out, _ := cli("repro", gpuFinding, "--backend", "auto"); code != exitViolation || firstLine(out) != want {
		t.Errorf("repro --backend auto without a GPU: exit %d, first line %q; want 1, on the host eagerly with the caveat", code, firstLine(out))
	}
	if code, _, errOut := cli("repro", gpuFinding, "--backend", "cpu", "--graph"); code != exitError || !strings.Contains(errOut, "--graph needs the cuda backend") {
		t.Errorf("repro --backend cpu --graph: exit %d, stderr %q; want 2 and why", code, errOut)
	}
}

// TestReproReplaysAsRecorded: a CPU finding's file records the cpu
// backend and replays there, saying so; a version 1 file (which records
// no backend) replays on the host as it always did, and says that too.
func TestReproReplaysAsRecorded(t *testing.T) {
	dir := t.TempDir()
	code, out, errOut := cli("check", "--plugin", "bf16scatter", "--layout", "bf16", "--padding", "sink", "--cases", "40",
		"--backend", "cpu", "--results", dir)
	if code != exitViolation {
		t.Fatalf("check: exit %d, want 1\n%s%s", code, out, errOut)
	}
	files, _ := filepath.Glob(filepath.Join(dir, "*.json"))
	if len(files) != 1 {
		t.Fatalf("repro files %v, want one", files)
	}
	r := readRepro(t, files[0])
	var shape struct { // the row's drawn shape, which the file's layout has
		HeadDim  int `json:"head_dim"`
		PageSize int `json:"page_size"`
	}
	if err := json.Unmarshal(r.Layout, &shape); err != nil || shape.HeadDim == 0 || shape.PageSize == 0 {
		t.Fatalf("the repro file's layout %s: %v", r.Layout, err)
	}
	if r.Version != report.ReproVersion || r.Backend != report.BackendCPU || r.Graph || r.HeadDim != shape.HeadDim || r.PageSize != shape.PageSize ||
		r.MaxCapacity != 512 || r.SlotBits != 64 || r.Value != "recipe" || r.Identity == nil || r.Identity.Name != "bf16scatter" ||
		len(r.Identity.SHA256) != 64 {
		t.Errorf("the repro file records %+v (identity %+v); want version %d on cpu, eager, D=%d P=%d (its layout's) C≤512, 64-bit slots, recipe, bf16scatter's SHA-256",
			r.Ran, r.Identity, report.ReproVersion, shape.HeadDim, shape.PageSize)
	}
	code, out, _ = cli("repro", files[0])
	if code != exitViolation || firstLine(out) != "replaying on cpu, as the case was found" {
		t.Errorf("repro: exit %d, first line %q; want 1 and that it replays on cpu as found", code, firstLine(out))
	}
	v1 := oldFormat(t, files[0])
	code, out, _ = cli("repro", v1)
	if code != exitViolation || !strings.HasPrefix(firstLine(out), "replaying on cpu: a version 1 repro file records no backend") {
		t.Errorf("repro of a version 1 file: exit %d, first line %q; want 1 on the host, saying why", code, firstLine(out))
	}
}

// TestGPUFindingReplaysAsItRan finds the incident on the GPU with graph
// replay, checks what its repro file records, and runs the replay line
// the report prints, as printed: it replays on the GPU in graph mode and
// fails again (exit 1). Needs a GPU; on the GPU machine:
//
//	./scripts/gpu-build ./harness/cmd/kvharness
//	TESTFLAGS=-test.run=GPUFinding ./scripts/gpu-test tests
func TestGPUFindingReplaysAsItRan(t *testing.T) {
	if err := cuda.Available(); err != nil {
		t.Skipf("needs a GPU (%v): on the GPU machine, ./scripts/gpu-build ./harness/cmd/kvharness, then TESTFLAGS=-test.run=GPUFinding ./scripts/gpu-test tests", err)
	}
	dir := t.TempDir()
	code, out, errOut := cli("check", "--plugin", "bf16scatter", "--backend", "cuda", "--graph", "--layout", "bf16", "--padding", "sink",
		"--cases", "200", "--results", dir)
	if code != exitViolation {
		t.Fatalf("check --backend cuda --graph: exit %d, want 1\n%s%s", code, out, errOut)
	}
	m := regexp.MustCompile(`(?m)^  replay: kvharness (repro \S+)$`).FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("no replay line in the report:\n%s", out)
	}
	path := strings.Fields(m[1])[1]
	r := readRepro(t, path)
	if r.Version != report.ReproVersion || r.Backend != report.BackendCUDA || r.Device == "" || !r.Graph || r.HeadDim != 128 ||
		r.PageSize != 64 || r.SlotBits != 64 || r.Value != "recipe" || r.Identity == nil || len(r.Identity.SHA256) != 64 {
		t.Errorf("the repro file records %+v (identity %+v); want cuda with its device's name, graph replay, D=128 P=64, 64-bit slots, recipe, a SHA-256", r.Ran, r.Identity)
	}
	if o := os.Getenv("OUT"); o != "" { // the device tool brings $OUT back: a real GPU finding to look at
		data, _ := os.ReadFile(path)
		os.WriteFile(filepath.Join(o, "gpu-finding.json"), data, 0o644)
	}
	code, out, errOut = cli(strings.Fields(m[1])...)
	if code != exitViolation || !strings.HasPrefix(firstLine(out), "replaying on cuda ("+r.Device) || !strings.Contains(firstLine(out), "with graph replay, as the case was found") {
		t.Errorf("the printed replay line, run as printed: exit %d, first line %q; want 1, on cuda with graph replay as found\n%s%s", code, firstLine(out), out, errOut)
	}
	code, out, _ = cli("repro", path, "--backend", "cpu")
	if code != exitViolation || !strings.Contains(firstLine(out), "not as found") || !strings.Contains(firstLine(out), "cannot show") {
		t.Errorf("repro --backend cpu of the GPU finding: exit %d, first line %q; want 1 and the host's caveat", code, firstLine(out))
	}
}

func firstLine(s string) string {
	line, _, _ := strings.Cut(s, "\n")
	return line
}

func readRepro(t *testing.T, path string) *report.Repro {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var raw struct { // the case stays raw: its type is the kernel's
		report.Repro
		Case json.RawMessage `json:"case"`
	}
	if err := json.Unmarshal(data, &raw); err != nil {
		t.Fatal(err)
	}
	return &raw.Repro
}

// oldFormat writes path's case as a version 1 file: the same case with
// no record of how it ran.
func oldFormat(t *testing.T, path string) string {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(data, &m); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"backend", "device", "device_ordinal", "graph", "head_dim", "page_size", "max_capacity", "slot_bits", "plugin_identity"} {
		delete(m, k)
	}
	m["version"] = json.RawMessage("1")
	out, _ := json.Marshal(m)
	v1 := filepath.Join(t.TempDir(), "v1.json")
	if err := os.WriteFile(v1, out, 0o644); err != nil {
		t.Fatal(err)
	}
	return v1
}

// TestReplayLineRunsAsPrinted: a failure of a plugin named by its manifest
// is saved under the plugin's own name (torchscatter-…, not
// kvharness-plugin-…), and its replay line names --plugin with the
// manifest's path, so that the line, run as printed, replays it; the
// file alone still runs no command.
func TestReplayLineRunsAsPrinted(t *testing.T) {
	quick(t)
	if _, err := plugin.Python("python3"); err != nil {
		t.Skipf("no python runs the Python examples here: %v", err)
	}
	manifest, _ := filepath.Abs(filepath.Join("..", "..", "..", "plugins", "python", "torchscatter", "kvharness-plugin.json"))
	results := t.TempDir()
	code, out, errOut := runCLI(t, "check", "--plugin", manifest, "--padding", "count", "--cases", "20", "--backend", "cpu", "--results", results)
	if code != exitViolation {
		t.Fatalf("check torchscatter --padding count: exit %d, want 1\n%s%s", code, out, errOut)
	}
	m := regexp.MustCompile(`(?m)^  replay: ((kvharness repro (\S+) --plugin (\S+))   # --plugin named: a repro file alone runs no command)$`).FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("no replay line naming --plugin in:\n%s", out)
	}
	if base := filepath.Base(m[3]); !strings.HasPrefix(base, "torchscatter-bf16-count-padding-") || m[4] != manifest {
		t.Errorf("replay line %q: want a file named after torchscatter and --plugin %s", m[2], manifest)
	}
	argv := shellWords(t, m[1]) // the whole line, its comment too: a user pastes all of it
	var stdout, stderr bytes.Buffer
	if code := run(context.Background(), &stdout, &stderr, argv[1:]); code != exitViolation || !strings.Contains(stdout.String(), "FAIL torchscatter") {
		t.Errorf("%s: exit %d, want 1 with the failure\n%s%s", m[1], code, &stdout, &stderr)
	}
	stdout.Reset()
	stderr.Reset()
	if code := run(context.Background(), &stdout, &stderr, []string{"repro", m[3]}); code != exitError || !strings.Contains(stderr.String(), "runs no command from it") {
		t.Errorf("repro FILE alone: exit %d, stderr %q; want 2, running nothing", code, &stderr)
	}
}

// shellWords splits a line as a POSIX shell does (sh itself, so the test
// reads the line as a user's shell would).
func shellWords(t *testing.T, line string) []string {
	t.Helper()
	out, err := exec.Command("sh", "-c", "set -- "+line+"\n"+`for w in "$@"; do printf '%s\0' "$w"; done`).Output()
	if err != nil {
		t.Fatalf("sh could not read %q: %v", line, err)
	}
	return strings.Split(strings.TrimSuffix(string(out), "\x00"), "\x00")
}

// TestReplayable: a repro file names a bundled plugin as it is and a path
// absolute, a manifest in the working folder (no slash) included, so the
// replay line runs from any folder; a command line stays as typed.
func TestReplayable(t *testing.T) {
	wd, _ := os.Getwd()
	for arg, want := range map[string]string{
		"fusedstore":                 "fusedstore",
		"kvharness-plugin.json":      filepath.Join(wd, "kvharness-plugin.json"),
		"./mystore":                  filepath.Join(wd, "mystore"),
		"python3 plugin.py":          "python3 plugin.py",
		"/abs/kvharness-plugin.json": "/abs/kvharness-plugin.json",
	} {
		if got := replayable(arg); got != want {
			t.Errorf("replayable(%q) = %q, want %q", arg, got, want)
		}
	}
}
