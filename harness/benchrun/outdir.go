package benchrun

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"syscall"

	"golang.org/x/sys/unix"
)

// An Out is a bench (or merge) output folder held by one process. The
// folder is locked (flock on the folder itself, so no lock file is left
// behind, and the kernel drops the lock when the process dies however it
// dies): a second bench on the same folder would append every cell to
// the journal a second time and both would write the outputs over each
// other. Nothing in it is written through a symbolic link: a link named
// cells.jsonl planted in a shared folder would otherwise make a night
// overwrite whatever it points to.
type Out struct {
	Path    string
	dir     *os.File
	created bool // the folder did not exist before: Abandon removes it
}

// outputs are the names bench writes in its folder.
var outputs = []string{JournalFile, LogFile, BenchFile, TableFile, ManifestFile, PlotDir}

// leftover matches the temporary files results.WriteFileAtomic makes
// (".NAME.tmp" and digits): a process killed between creating one and
// renaming it leaves it behind.
var leftover = regexp.MustCompile(`^\..+\.tmp[0-9]+$`)

// CheckOut refuses an output folder bench must not write: one where an
// output name is a symbolic link, or one that is a file. It changes
// nothing, so that a run can refuse before it starts plugins.
func CheckOut(path string) error {
	st, err := os.Stat(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil
	case err != nil:
		return fmt.Errorf("--out %s: %w", path, err)
	case !st.IsDir():
		return fmt.Errorf("--out %s is a file, not a folder: give a folder (it is made if missing)", path)
	}
	for _, name := range outputs {
		p := filepath.Join(path, name)
		if st, err := os.Lstat(p); err == nil && st.Mode()&fs.ModeSymlink != 0 {
			return fmt.Errorf("--out %s: %s is a symbolic link, and kvharness writes no output through a link: remove it, or give another --out", path, p)
		}
	}
	return nil
}

// OpenOut makes the folder if needed, locks it, checks it as CheckOut
// does (again, under the lock) and removes the temporary files a killed
// run left in it. A folder another process holds is an error naming it.
func OpenOut(path string) (*Out, error) {
	o := &Out{Path: path}
	if _, err := os.Stat(path); errors.Is(err, fs.ErrNotExist) {
		o.created = true
	}
	if err := os.MkdirAll(path, 0o755); err != nil {
		return nil, fmt.Errorf("--out %s: %w; give a folder you can write", path, err)
	}
	dir, err := os.Open(path)
	if err != nil {
		o.abandon()
		return nil, fmt.Errorf("--out %s: %w; give a folder you can write", path, err)
	}
	o.dir = dir
	if err := unix.Flock(int(dir.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
		o.dir.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return nil, fmt.Errorf("--out %s is in use by another kvharness bench or merge: wait for it to finish, or give another --out", path)
		}
		return nil, fmt.Errorf("lock --out %s: %w", path, err)
	}
	if err := CheckOut(path); err != nil {
		o.Close()
		return nil, err
	}
	if err := o.removeLeftovers(); err != nil {
		o.Close()
		return nil, err
	}
	return o, nil
}

// removeLeftovers deletes the temporary files of a killed run, in the
// folder and in its plots. Under the lock no other run is writing them.
func (o *Out) removeLeftovers() error {
	for _, dir := range []string{o.Path, filepath.Join(o.Path, PlotDir)} {
		entries, err := os.ReadDir(dir)
		if err != nil {
			continue // no plots yet
		}
		for _, e := range entries {
			if e.Type().IsRegular() && leftover.MatchString(e.Name()) {
				if err := os.Remove(filepath.Join(dir, e.Name())); err != nil {
					return fmt.Errorf("remove %s, left by a killed run: %w", filepath.Join(dir, e.Name()), err)
				}
			}
		}
	}
	return nil
}

// Close releases the folder.
func (o *Out) Close() {
	if o.dir != nil {
		o.dir.Close() // drops the lock
		o.dir = nil
	}
}

// Abandon releases a folder the run wrote nothing lasting to: an empty
// journal is removed, so that the next plain run is not told to
// --resume a night that never started, and so is the folder where this
// run made it and it is now empty.
func (o *Out) Abandon() {
	journal := filepath.Join(o.Path, JournalFile)
	if st, err := os.Lstat(journal); err == nil && st.Mode().IsRegular() && st.Size() == 0 {
		os.Remove(journal)
	}
	o.Close()
	o.abandon()
}

func (o *Out) abandon() {
	if o.created {
		os.Remove(o.Path) // fails, as it should, unless empty
	}
}
