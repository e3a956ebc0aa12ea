package results

import (
	"errors"
	"io"
	"os"
	"path/filepath"
	"testing"
)

func TestWriteFileAtomic(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "out.txt")
	err := WriteFileAtomic(path, 0o640, func(w io.Writer) error {
		_, err := io.WriteString(w, "whole\n")
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	data, _ := os.ReadFile(path)
	st, _ := os.Stat(path)
	if string(data) != "whole\n" || st.Mode().Perm() != 0o640 {
		t.Errorf("wrote %q with mode %v, want \"whole\\n\" 0640", data, st.Mode().Perm())
	}
}

func TestWriteFileAtomicFailureKeepsOld(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "out.txt")
	os.WriteFile(path, []byte("old\n"), 0o644)
	boom := errors.New("boom")
	err := WriteFileAtomic(path, 0o644, func(w io.Writer) error {
		io.WriteString(w, "half of the new")
		return boom
	})
	if !errors.Is(err, boom) {
		t.Fatalf("error = %v, want it to wrap the writer's error", err)
	}
	if data, _ := os.ReadFile(path); string(data) != "old\n" {
		t.Errorf("failed write left %q, want the old content", data)
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 1 {
		t.Errorf("directory holds %d entries after a failed write, want 1 (temp file removed)", len(ents))
	}
}

func TestWriteFileAtomicMissingDir(t *testing.T) {
	err := WriteFileAtomic(filepath.Join(t.TempDir(), "no", "out.txt"), 0o644, func(io.Writer) error { return nil })
	if !errors.Is(err, os.ErrNotExist) {
		t.Errorf("missing directory: %v, want os.ErrNotExist", err)
	}
}
