package benchrun

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestOutLocks: while one process holds a folder a second OpenOut of it
// is refused, naming it; once it is closed the folder opens again.
func TestOutLocks(t *testing.T) {
	path := filepath.Join(t.TempDir(), "night")
	first, err := OpenOut(path)
	if err != nil {
		t.Fatal(err)
	}
	if second, err := OpenOut(path); err == nil || !strings.Contains(err.Error(), path+" is in use") {
		if second != nil {
			second.Close()
		}
		t.Errorf("a second OpenOut of a held folder: %v; want it refused naming the folder", err)
	}
	first.Close()
	again, err := OpenOut(path)
	if err != nil {
		t.Errorf("OpenOut after Close: %v", err)
	} else {
		again.Close()
	}
}

// TestOutRefusesLinks: an output name that is a symbolic link is refused
// before and under the lock, and the file it names is untouched.
func TestOutRefusesLinks(t *testing.T) {
	for _, name := range outputs {
		dir := t.TempDir()
		path := filepath.Join(dir, "night")
		os.Mkdir(path, 0o755)
		victim := filepath.Join(dir, "victim")
		os.WriteFile(victim, []byte("keep"), 0o644)
		os.Symlink(victim, filepath.Join(path, name))
		if err := CheckOut(path); err == nil || !strings.Contains(err.Error(), name+" is a symbolic link") {
			t.Errorf("%s a link: CheckOut %v; want it refused", name, err)
		}
		if o, err := OpenOut(path); err == nil {
			o.Close()
			t.Errorf("%s a link: OpenOut accepted it", name)
		}
		if b, _ := os.ReadFile(victim); string(b) != "keep" {
			t.Errorf("%s a link: the file it names changed", name)
		}
	}
	file := filepath.Join(t.TempDir(), "f")
	os.WriteFile(file, nil, 0o644)
	if err := CheckOut(file); err == nil || !strings.Contains(err.Error(), "is a file, not a folder") {
		t.Errorf("CheckOut of a file: %v", err)
	}
}

// TestOutRemovesLeftovers: the temporary files a killed run left (in the
// folder and its plots) are removed when the folder is opened; other
// files, and files that only look alike, stay.
func TestOutRemovesLeftovers(t *testing.T) {
	path := t.TempDir()
	os.Mkdir(filepath.Join(path, PlotDir), 0o755)
	for _, f := range []string{".bench.txt.tmp123", ".cells.jsonl.tmp9", "plots/.latency_x.png.tmp77", "bench.txt", "notes.tmp1", ".hidden", "plots/a.png"} {
		os.WriteFile(filepath.Join(path, f), nil, 0o644)
	}
	o, err := OpenOut(path)
	if err != nil {
		t.Fatal(err)
	}
	o.Close()
	var left []string
	filepath.WalkDir(path, func(p string, d os.DirEntry, err error) error {
		if !d.IsDir() {
			rel, _ := filepath.Rel(path, p)
			left = append(left, rel)
		}
		return nil
	})
	slices.Sort(left)
	if want := []string{".hidden", "bench.txt", "notes.tmp1", "plots/a.png"}; !slices.Equal(left, want) {
		t.Errorf("left %v, want %v", left, want)
	}
}

// TestOutAbandon: a run that wrote nothing leaves no empty journal, and
// no folder where it made one; a folder that was there stays, and so
// does a journal that holds runs.
func TestOutAbandon(t *testing.T) {
	parent := t.TempDir()
	path := filepath.Join(parent, "night")
	o, err := OpenOut(path)
	if err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(path, JournalFile), nil, 0o644)
	o.Abandon()
	if _, err := os.Stat(path); !os.IsNotExist(err) {
		t.Errorf("the folder this run made is still there: %v", err)
	}
	os.Mkdir(path, 0o755)
	os.WriteFile(filepath.Join(path, JournalFile), []byte("{}\n"), 0o644)
	o, err = OpenOut(path)
	if err != nil {
		t.Fatal(err)
	}
	o.Abandon()
	if _, err := os.Stat(filepath.Join(path, JournalFile)); err != nil {
		t.Errorf("a journal with runs was removed: %v", err)
	}
}
