package rundir

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// Dir is a private 0700 directory for one harness run: shared-memory files
// and plugin sockets live in it. A lock file held for the run's lifetime
// marks it live; the next run removes directories whose lock is free, so a
// harness killed with SIGKILL leaves nothing behind for long.
type Dir struct {
	Path string
	lock *os.File
}

// ErrUnsafeDir is returned when the per-user directory is not ours or not
// private.
var ErrUnsafeDir = errors.New("unsafe runtime directory")

// RuntimeRoot is where run directories are made: /dev/shm when it exists
// (a tmpfs, so shared-memory files never touch a disk), else the temp dir.
// KVHARNESS_RUNTIME_DIR overrides it.
func RuntimeRoot() string {
	if d := os.Getenv("KVHARNESS_RUNTIME_DIR"); d != "" {
		return d
	}
	if st, err := os.Stat("/dev/shm"); err == nil && st.IsDir() && unix.Access("/dev/shm", unix.W_OK) == nil {
		return "/dev/shm"
	}
	return os.TempDir()
}

// OpenDir makes a run directory under RuntimeRoot and removes stale ones.
// The directory is made and locked under a name sweeps pass over, then
// renamed: a sweep by another run (or another OpenDir of this one) never
// sees a run directory whose lock is not yet held.
func Open() (*Dir, error) {
	user := filepath.Join(RuntimeRoot(), fmt.Sprintf("kvharness-%d", os.Getuid()))
	if err := privateDir(user); err != nil {
		return nil, err
	}
	sweep(user)
	tmp, err := os.MkdirTemp(user, fmt.Sprintf("%s%d-", newPrefix, os.Getpid()))
	if err != nil {
		return nil, fmt.Errorf("make run directory: %w", err)
	}
	lock, err := os.OpenFile(filepath.Join(tmp, "lock"), os.O_CREATE|os.O_RDWR, 0o600)
	if err == nil {
		if err = unix.Flock(int(lock.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
			lock.Close()
		}
	}
	if err != nil {
		os.RemoveAll(tmp)
		return nil, fmt.Errorf("lock run directory: %w", err)
	}
	path := filepath.Join(user, runPrefix+strings.TrimPrefix(filepath.Base(tmp), newPrefix))
	if err := os.Rename(tmp, path); err != nil {
		lock.Close()
		os.RemoveAll(tmp)
		return nil, fmt.Errorf("name run directory: %w", err)
	}
	d := &Dir{Path: path, lock: lock}
	live.Lock()
	live.dirs[d] = true
	live.Unlock()
	return d, nil
}

// live is every run directory this process has open and not closed.
var live = struct {
	sync.Mutex
	dirs map[*Dir]bool
}{dirs: map[*Dir]bool{}}

// RemoveAll kills the plugins of every run directory this process has
// open and removes the directories: what a process about to exit at once
// (a second Ctrl-C) does instead of unwinding. The directories' owners
// must not use them afterwards.
func RemoveAll() {
	live.Lock()
	defer live.Unlock()
	for d := range live.dirs {
		killRecordedGroups(d.Path)
		os.RemoveAll(d.Path)
		delete(live.dirs, d)
	}
}

// Run directories are named runPrefix…; newPrefix… while being made.
const (
	runPrefix = "run-"
	newPrefix = "new-"
)

func privateDir(path string) error {
	if err := os.Mkdir(path, 0o700); err != nil && !errors.Is(err, os.ErrExist) {
		return fmt.Errorf("make %s: %w", path, err)
	}
	st, err := os.Lstat(path)
	if err != nil {
		return err
	}
	sys, ok := st.Sys().(*syscall.Stat_t)
	if !st.IsDir() || !ok || int(sys.Uid) != os.Getuid() || st.Mode().Perm() != 0o700 {
		return fmt.Errorf("%w: %s must be a directory owned by uid %d with mode 0700 (is %v); remove it and retry",
			ErrUnsafeDir, path, os.Getuid(), st.Mode())
	}
	return nil
}

// sweep removes run directories whose owner is gone, and kills the process
// groups their plugins were started in; and directories left half made
// (their run died between making and naming them) once they are old.
func sweep(user string) {
	entries, _ := os.ReadDir(user)
	for _, e := range entries {
		path := filepath.Join(user, e.Name())
		if e.IsDir() && strings.HasPrefix(e.Name(), newPrefix) {
			if st, err := os.Stat(path); err == nil && time.Since(st.ModTime()) > youngest && stale(path) {
				os.RemoveAll(path)
			}
			continue
		}
		if !e.IsDir() || !strings.HasPrefix(e.Name(), runPrefix) {
			continue
		}
		if stale(path) {
			killRecordedGroups(path)
			os.RemoveAll(path)
		}
	}
}

// youngest is how old a run directory without a lock must be before it
// counts as stale: another run may be between creating it and locking it.
const youngest = time.Minute

func stale(path string) bool {
	f, err := os.Open(filepath.Join(path, "lock"))
	if err != nil {
		st, serr := os.Stat(path)
		return errors.Is(err, os.ErrNotExist) && serr == nil && time.Since(st.ModTime()) > youngest
	}
	defer f.Close()
	if unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB) != nil {
		return false // held: its run is alive
	}
	unix.Flock(int(f.Fd()), unix.LOCK_UN)
	return true
}

// Close removes the directory and everything in it.
func (d *Dir) Close() error {
	live.Lock()
	delete(live.dirs, d)
	live.Unlock()
	err := os.RemoveAll(d.Path)
	d.lock.Close()
	return err
}
