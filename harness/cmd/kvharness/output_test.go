package main

import (
	"bytes"
	"context"
	"io"
	"os"
	"strings"
	"testing"
)

// TestOutputOnAFullDevice: a command whose stdout or stderr is /dev/full
// exits 2 and says so on the stream that still works; the same command
// on working streams is the control. A failing check whose report cannot
// be written exits 2, not 1: a report nobody read is no verdict.
func TestOutputOnAFullDevice(t *testing.T) {
	full := func(t *testing.T) *os.File {
		f, err := os.OpenFile("/dev/full", os.O_WRONLY, 0)
		if err != nil {
			t.Skipf("no /dev/full: %v", err)
		}
		t.Cleanup(func() { f.Close() })
		return f
	}
	type streams struct {
		fullOut, fullErr bool
	}
	for _, tc := range []struct {
		name     string
		args     []string
		on       streams
		want     int
		saidOn   string // "stdout", "stderr" or "" (none works)
		saying   string
		shortToo bool
	}{
		{"help, control", []string{"help"}, streams{}, exitPass, "", "", true},
		{"help > /dev/full", []string{"help"}, streams{fullOut: true}, exitError, "stderr", "writing to stdout failed", true},
		{"version > /dev/full", []string{"version"}, streams{fullOut: true}, exitError, "stderr", "writing to stdout failed", true},
		{"error 2> /dev/full", []string{"nosuch"}, streams{fullErr: true}, exitError, "stdout", "writing to stderr failed", true},
		{"both on /dev/full", []string{"help"}, streams{fullOut: true, fullErr: true}, exitError, "", "", true},
		{"a failing check, control", []string{"check", "--plugin", "bf16scatter", "--padding", "sink", "--cases", "20", "--layout", "bf16", "--backend", "cpu"},
			streams{}, exitViolation, "", "", false},
		{"a failing check > /dev/full", []string{"check", "--plugin", "bf16scatter", "--padding", "sink", "--cases", "20", "--layout", "bf16", "--backend", "cpu"},
			streams{fullOut: true}, exitError, "stderr", "writing to stdout failed", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if !tc.shortToo {
				quick(t)
			}
			args := tc.args
			if args[0] == "check" {
				args = append(args, "--results", t.TempDir())
			}
			var outBuf, errBuf bytes.Buffer
			var stdout, stderr io.Writer = &outBuf, &errBuf
			if tc.on.fullOut {
				stdout = full(t)
			}
			if tc.on.fullErr {
				stderr = full(t)
			}
			code := run(context.Background(), stdout, stderr, args)
			t.Logf("exit %d\nstdout: %s\nstderr: %s", code, outBuf.String(), errBuf.String())
			if code != tc.want {
				t.Errorf("exit %d, want %d", code, tc.want)
			}
			said := map[string]string{"stdout": outBuf.String(), "stderr": errBuf.String()}[tc.saidOn]
			if tc.saying != "" && !strings.Contains(said, tc.saying) {
				t.Errorf("%s does not say %q", tc.saidOn, tc.saying)
			}
			if tc.saying == "" && tc.want == exitPass && outBuf.Len() == 0 {
				t.Errorf("the control printed nothing")
			}
		})
	}
}
