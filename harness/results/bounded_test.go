package results

import (
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestLogsReadBounded: a results log or journal that is a device or a
// folder is refused by name, a missing one still matches fs.ErrNotExist
// (a fresh --resume), and a file past the bound fails instead of being
// read on: here a bound of 10 bytes over files of 10 and 11.
func TestLogsReadBounded(t *testing.T) {
	dir := t.TempDir()
	for _, path := range []string{"/dev/zero", dir} {
		if _, err := ReadLogFile(path); err == nil || !strings.Contains(err.Error(), path+" is not a regular file") {
			t.Errorf("ReadLogFile(%s): %v; want it refused by name", path, err)
		}
		if _, err := ReadRunsFile(path); err == nil || !strings.Contains(err.Error(), "run journal "+path) {
			t.Errorf("ReadRunsFile(%s): %v; want it refused by name", path, err)
		}
	}
	if _, err := ReadRunsFile(filepath.Join(dir, "none.jsonl")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("a missing journal: %v; want fs.ErrNotExist", err)
	}
	for size, wantErr := range map[int]bool{10: false, 11: true} {
		path := filepath.Join(dir, "f")
		os.WriteFile(path, []byte(strings.Repeat("x", size)), 0o644)
		f, err := os.Open(path)
		if err != nil {
			t.Fatal(err)
		}
		_, err = io.ReadAll(&boundedFile{f: f, left: 10 + 1, what: "log"})
		f.Close()
		if (err != nil) != wantErr {
			t.Errorf("%d bytes under a bound of 10: error %v, want error %v", size, err, wantErr)
		}
	}
}

// TestOpenLogRefusesLinks: a journal that is a symbolic link is refused,
// and the file it names is left as it was.
func TestOpenLogRefusesLinks(t *testing.T) {
	dir := t.TempDir()
	victim := filepath.Join(dir, "victim")
	os.WriteFile(victim, []byte("keep\n"), 0o644)
	link := filepath.Join(dir, "runs.jsonl")
	if err := os.Symlink(victim, link); err != nil {
		t.Fatal(err)
	}
	if w, err := OpenLog(link); err == nil || !strings.Contains(err.Error(), "is a symbolic link") {
		if w != nil {
			w.Close()
		}
		t.Errorf("OpenLog through a link: %v; want it refused", err)
	}
	if b, _ := os.ReadFile(victim); string(b) != "keep\n" {
		t.Errorf("the linked file changed: %q", b)
	}
}
