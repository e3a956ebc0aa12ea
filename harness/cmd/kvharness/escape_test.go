package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// hostileName would retitle the terminal, clear it and turn it red.
const hostileName = "evil\x1b]0;pwned\x07\x1b[2J\x1b[31m\u009b1m"

// rawControl reports the first control byte in out that a terminal would
// act on: anything but a line break or a tab.
func rawControl(out []byte) (int, bool) {
	for i, c := range out {
		if c < 0x20 && c != '\n' && c != '\t' || c == 0x7f {
			return i, true
		}
	}
	if i := bytes.Index(out, []byte("\u009b")); i >= 0 {
		return i, true
	}
	return 0, false
}

// TestNoControlCharacterReachesTheTerminal: a layout's name, a repro
// file's layout name, a compare input's benchmark names and a plugin's
// crash message, each holding escape sequences, are printed escaped on
// stdout and stderr alike, whatever the command.
func TestNoControlCharacterReachesTheTerminal(t *testing.T) {
	quick(t)
	dir := t.TempDir()
	layoutJSON := `{"name": "` + strings.ReplaceAll(strings.ReplaceAll(hostileName, "\x1b", `\u001b`), "\x07", `\u0007`) +
		`", "head_dim": 16, "page_size": 4, "fields": [{"name": "v", "kind": "bf16", "to": 16}], "planes": [["v"]]}`
	lay := filepath.Join(dir, "layout.json")
	write(t, lay, layoutJSON)
	repro := filepath.Join(dir, "repro.json")
	write(t, repro, strings.Replace(reproWith(`"plugin": "fusedstore"`, okCase), `"name": "bf16"`, `"name": "`+
		strings.ReplaceAll(strings.ReplaceAll(hostileName, "\x1b", `\u001b`), "\x07", `\u0007`)+`"`, 1))
	base, next := filepath.Join(dir, "base.txt"), filepath.Join(dir, "new.txt")
	bench := "goos: linux\nBenchmarkStore/" + hostileName + "-2 \t 100\t 1000 ns/op\n"
	write(t, base, strings.Repeat(bench, 6))
	write(t, next, strings.Repeat(strings.Replace(bench, "1000 ns/op", "2000 ns/op", 1), 6))
	for _, args := range [][]string{
		{"check", "--plugin", "fusedstore", "--layout-file", lay, "--cases", "5", "--backend", "cpu", "--padding", "sink", "--results", filepath.Join(dir, "r")},
		{"repro", repro},
		{"compare", base, next},
		{"check", "--plugin", "faulty", "--variant", "panic-escape", "--layout", "bf16", "--padding", "none", "--cases", "5",
			"--backend", "cpu", "--results", filepath.Join(dir, "r")},
	} {
		var stdout, stderr bytes.Buffer
		code := run(context.Background(), &stdout, &stderr, args)
		all := append(stdout.Bytes(), stderr.Bytes()...)
		if i, ok := rawControl(all); ok {
			t.Errorf("%v (exit %d): a raw control byte at %d: %q", args[:2], code, i, all[max(0, i-40):min(len(all), i+40)])
		}
		if !bytes.Contains(all, []byte(`\x1b]0;pwned`)) && !bytes.Contains(all, []byte(`\u001b]0;pwned`)) {
			t.Errorf("%v (exit %d): the hostile text is not shown escaped:\n%s", args[:2], code, all)
		}
	}
	os.RemoveAll(dir)
}
