package plugin

import (
	"os"
	"strings"
	"testing"
)

// The crash reports here were written by real processes: a Go plugin's
// panic inside its Store (recorded from the faulty plugin), a runtime
// error, and a Python plugin's exception under grpcio.
func TestParsePanic(t *testing.T) {
	for _, tc := range []struct {
		file, message string
		frames        []string // the plugin's own frames' functions, innermost first
		other         int
	}{
		{"crash-go-panic.txt", "panic: faulty: deliberate panic storing 2 rows",
			[]string{"github.com/kvharness/kvharness/plugins/faulty/kernel.misbehave",
				"github.com/kvharness/kvharness/plugins/faulty/kernel.store.Store"}, 7},
		{"crash-go-runtime.txt", "panic: runtime error: slice bounds out of range [:1099511628032] with capacity 3290112\n" +
			"[signal SIGSEGV: segmentation violation code=0x1 addr=0x0 pc=0x4a1b2c]",
			[]string{"github.com/kvharness/kvharness/plugins/internal/cpustore.PutBF16",
				"github.com/kvharness/kvharness/plugins/fusedstore/kernel.(*kernel).Store"}, 2},
		{"crash-python.txt", "ValueError: could not broadcast input array from shape (256,) into shape (0,)",
			[]string{"scatter", "store"}, 2},
	} {
		data, err := os.ReadFile("testdata/" + tc.file)
		if err != nil {
			t.Fatal(err)
		}
		if !startsCrash(strings.SplitN(string(data), "\n", 2)[0]) {
			t.Errorf("%s: its first line does not start a crash report", tc.file)
		}
		p := parsePanic(string(data))
		var funcs []string
		for _, f := range p.Frames {
			funcs = append(funcs, f.Func)
			if f.File == "" || f.Line == 0 {
				t.Errorf("%s: frame %v has no file and line", tc.file, f)
			}
		}
		if p.Message != tc.message || strings.Join(funcs, " ") != strings.Join(tc.frames, " ") || p.Other != tc.other {
			t.Errorf("%s: message %q frames %v (%d left out); want %q %v (%d)", tc.file, p.Message, funcs, p.Other, tc.message, tc.frames, tc.other)
		}
	}
}

// TestTailKeepsTheStartOfACrash: a crash report longer than the tail
// keeps its start, and lines before it do not count.
func TestTailKeepsTheStartOfACrash(t *testing.T) {
	tl := newTail(256)
	tl.Write([]byte("starting\npanic: earlier, recovered and logged\n\ngoroutine 1 [running]:\n"))
	tl.Write([]byte("some log line\npanic: the real one\n\ngoroutine 7 [running]:\nexample.com/p/kernel.Store(0x1)\n"))
	tl.Write([]byte("\t/src/kernel.go:12 +0x1\n"))
	for range 100 {
		tl.Write([]byte("google.golang.org/grpc.(*Server).processRPC(0x1)\n\t/x/grpc/server.go:1 +0x1\n"))
	}
	p := tl.Crash()
	if p == nil || p.Message != "panic: the real one" || len(p.Frames) != 1 || p.Frames[0].Line != 12 {
		t.Fatalf("crash %+v: want the last panic's message and its one own frame", p)
	}
	if strings.Contains(tl.Lines(12), "the real one") {
		t.Error("the tail was supposed to have lost the start: the test proves nothing")
	}
}
