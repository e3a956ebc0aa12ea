package plugin

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// The logs in testdata follow compute-sanitizer's record format as
// NVIDIA documents it (a first line, indented lines, a line of the prefix
// alone between records, summaries at the end); the memcheck one is what
// an out-of-bounds 16-byte store from a bf16 kernel prints.
func TestParseSanitizer(t *testing.T) {
	for _, tc := range []struct {
		file, tool string
		messages   []string
		kernel     string
		address    string
	}{
		{"sanitizer-memcheck-oob.log", "memcheck", []string{"Invalid __global__ write of size 16 bytes", "Invalid __global__ write of size 16 bytes"},
			"fusedstore_bf16", "Address 0x10002ff6000"},
		{"sanitizer-memcheck-clean.log", "memcheck", nil, "", ""},
		{"sanitizer-racecheck.log", "racecheck", []string{"Error: Race reported between Write access at reduce_tile(float const*, float*, int)+0x1f0 in reduce.cu:31"},
			"reduce_tile", ""},
		{"sanitizer-initcheck.log", "initcheck", []string{"Uninitialized __global__ memory read of size 4 bytes"}, "gather_scales", "Address 0x7f3b6e200100"},
		{"sanitizer-synccheck.log", "synccheck", []string{"Barrier error detected. Divergent thread(s) in warp"}, "ThreadDivergence", ""},
	} {
		data, err := os.ReadFile(filepath.Join("testdata", tc.file))
		if err != nil {
			t.Fatal(err)
		}
		fs := ParseSanitizer(tc.tool, string(data))
		var msgs []string
		for _, f := range fs {
			msgs = append(msgs, f.Message)
			if f.Kernel != tc.kernel || !strings.HasPrefix(f.Address, tc.address) || (tc.address == "") != (f.Address == "") || f.Tool != tc.tool || len(f.Lines) < 2 {
				t.Errorf("%s: finding %+v: want kernel %q, address %q, the record's lines", tc.file, f, tc.kernel, tc.address)
			}
		}
		if !slices.Equal(msgs, tc.messages) {
			t.Errorf("%s: findings %q, want %q", tc.file, msgs, tc.messages)
		}
	}
}

func TestKernelAt(t *testing.T) {
	for in, want := range map[string]string{
		"fusedstore_bf16+0x3f0":                            "fusedstore_bf16",
		"scale_kernel(float*, int, float)+0x50 in s.cu:14": "scale_kernel",
		"unaligned_kernel():0x160 in memcheck_demo.cu:6":   "unaligned_kernel",
		"0x150 in kernel(int*, int)":                       "kernel",
		"0x00000148 in vectorAdd":                          "vectorAdd",
	} {
		if got := kernelAt(in); got != want {
			t.Errorf("kernelAt(%q) = %q, want %q", in, got, want)
		}
	}
}

// TestSanitizerLogReadsCompleteRecords: a log read while the sanitizer
// is still writing yields only complete records, the rest at the end.
func TestSanitizerLogReadsCompleteRecords(t *testing.T) {
	data, _ := os.ReadFile("testdata/sanitizer-memcheck-oob.log")
	path := filepath.Join(t.TempDir(), "s.log")
	text := string(data)
	mid := strings.Index(text, "by thread (1,0,0)") // inside the second record
	os.WriteFile(path, []byte(text[:mid]), 0o644)
	l := &sanLog{tool: "memcheck", path: path}
	if fs := l.read(false); len(fs) != 1 || !strings.Contains(fs[0].Lines[2], "thread (0,0,0)") {
		t.Fatalf("first read: %+v; want the first record only", fs)
	}
	f, _ := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	f.WriteString(text[mid:])
	f.Close()
	if fs := l.read(true); len(fs) != 1 || !strings.Contains(strings.Join(fs[0].Lines, "\n"), "thread (1,0,0)") {
		t.Fatalf("second read: %+v; want the second record, whole", fs)
	}
	if fs := l.read(true); len(fs) != 0 {
		t.Errorf("third read: %+v; want nothing new", fs)
	}
}

func TestSanitizerArgv(t *testing.T) {
	s := &Sanitizer{Tool: "memcheck", Exe: "/usr/local/cuda/bin/compute-sanitizer"}
	got := s.Argv("/run/k 100%/a.log", []string{"/bin/plugin", "--flag"})
	want := []string{"/usr/local/cuda/bin/compute-sanitizer", "--tool", "memcheck", "--log-file", "/run/k 100%%/a.log",
		"--prefix", "=========", "--print-limit", "100", "--report-api-errors", "no", "--require-cuda-init", "no",
		"--target-processes", "all", "--", "/bin/plugin", "--flag"}
	if !slices.Equal(got, want) {
		t.Errorf("argv\n%q\nwant\n%q", got, want)
	}
	if _, err := NewSanitizer("leakcheck", t.TempDir()); err == nil {
		t.Error("an unknown tool was accepted")
	}
}
