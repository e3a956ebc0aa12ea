package inputfile

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestOpenRefusesWhatIsNotAFile: a FIFO with no writer, a device and a
// folder are refused at once with a line naming the path and what it is;
// none is waited on.
func TestOpenRefusesWhatIsNotAFile(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	for path, want := range map[string]string{fifo: "a FIFO", "/dev/zero": "a character device", dir: "is not a regular file (a folder)",
		filepath.Join(dir, "none"): "give the path of an existing file"} {
		start := time.Now()
		_, err := Read(path, "layout file", 1<<20)
		if err == nil || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), path) {
			t.Errorf("%s: %v, want an error saying %q", path, err, want)
		}
		if d := time.Since(start); d > time.Second {
			t.Errorf("%s: took %v", path, d)
		}
	}
	file := filepath.Join(dir, "ok.json")
	os.WriteFile(file, []byte(`{"a": 1}`), 0o644)
	if data, err := Read(file, "layout file", 1<<20); err != nil || string(data) != `{"a": 1}` {
		t.Errorf("a regular file: %q, %v", data, err)
	}
}

// TestDecodeJSONRefusesDuplicateKeys: a key twice in any object, however
// deep, is an error naming its path; the same key in sibling objects is
// not.
func TestDecodeJSONRefusesDuplicateKeys(t *testing.T) {
	var v any
	for in, want := range map[string]string{
		`{"seed": 1, "seed": 2}`:                         `duplicate key "seed"`,
		`{"case": {"valid": 1, "loc": [1], "valid": 2}}`: `duplicate key "case.valid"`,
		`{"a": [{"x": 1}, {"x": 2, "x": 3}]}`:            `duplicate key "a.x"`,
		`{"a": {"b": {}}, "c": 1, "a": 2}`:               `duplicate key "a"`,
	} {
		if err := DecodeJSON([]byte(in), &v); err == nil || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), "remove") {
			t.Errorf("%s: %v, want %s", in, err, want)
		}
	}
	for _, in := range []string{`{"a": [{"x": 1}, {"x": 2}], "b": {"x": 1}}`, `[1, 2, {"k": "k"}]`, `{"k": "k", "v": {"k": 1}}`} {
		if err := DecodeJSON([]byte(in), &v); err != nil {
			t.Errorf("%s: %v", in, err)
		}
	}
}
