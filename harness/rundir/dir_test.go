package rundir

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// A run directory whose owner died (lock free) is swept by the next run; a
// live one is left alone.
func TestStaleDirsAreSwept(t *testing.T) {
	t.Setenv("KVHARNESS_RUNTIME_DIR", t.TempDir())
	live := mustOpen(t)
	user := filepath.Dir(live.Path)
	stale := filepath.Join(user, "run-999999-dead")
	os.Mkdir(stale, 0o700)
	os.WriteFile(filepath.Join(stale, "lock"), nil, 0o600)
	os.WriteFile(filepath.Join(stale, "arena-1"), []byte("left behind"), 0o600)
	mustOpen(t) // the next run, which sweeps
	if _, err := os.Stat(stale); !os.IsNotExist(err) {
		t.Errorf("stale run directory kept: %v", err)
	}
	if _, err := os.Stat(live.Path); err != nil {
		t.Errorf("live run directory removed: %v", err)
	}
}

// TestConcurrentOpenDirs: runs opening their directories at the same time
// (each OpenDir sweeps the others') all get a live directory; a half-made
// one from a run that died is swept once old, a fresh one is not.
func TestConcurrentOpenDirs(t *testing.T) {
	t.Setenv("KVHARNESS_RUNTIME_DIR", t.TempDir())
	first := mustOpen(t)
	user := filepath.Dir(first.Path)
	old, fresh := filepath.Join(user, "new-1-old"), filepath.Join(user, "new-2-fresh")
	for _, d := range []string{old, fresh} {
		os.Mkdir(d, 0o700)
	}
	past := time.Now().Add(-2 * youngest)
	os.Chtimes(old, past, past)
	dirs := make([]*Dir, 64)
	errs := make([]error, len(dirs))
	var wg sync.WaitGroup
	for i := range dirs {
		wg.Go(func() { dirs[i], errs[i] = Open() })
	}
	wg.Wait()
	for i, d := range dirs {
		if errs[i] != nil {
			t.Fatalf("OpenDir %d: %v", i, errs[i])
		}
		defer d.Close()
	}
	for i, d := range dirs {
		if _, err := os.Stat(filepath.Join(d.Path, "lock")); err != nil || !strings.HasPrefix(filepath.Base(d.Path), "run-") {
			t.Errorf("directory %d (%s) after all opened: %v", i, d.Path, err)
		}
	}
	if _, err := os.Stat(old); !os.IsNotExist(err) {
		t.Errorf("half-made directory from a dead run kept: %v", err)
	}
	if _, err := os.Stat(fresh); err != nil {
		t.Errorf("half-made directory of a live run removed: %v", err)
	}
}

func TestUnsafeUserDirRefused(t *testing.T) {
	root := t.TempDir()
	t.Setenv("KVHARNESS_RUNTIME_DIR", root)
	os.Mkdir(filepath.Join(root, "kvharness-"+strconv.Itoa(os.Getuid())), 0o777)
	os.Chmod(filepath.Join(root, "kvharness-"+strconv.Itoa(os.Getuid())), 0o777)
	if _, err := Open(); err == nil {
		t.Error("a world-writable runtime directory was accepted")
	}
}

// TestSweepKillsOrphans: a run killed with SIGKILL leaves plugin children
// behind; the next run kills the processes of the groups it recorded that
// carry its marker, and nothing else.
func TestSweepKillsOrphans(t *testing.T) {
	t.Setenv("KVHARNESS_RUNTIME_DIR", t.TempDir())
	live := mustOpen(t)
	stale := filepath.Join(filepath.Dir(live.Path), "run-999998-dead")
	os.Mkdir(stale, 0o700)
	os.WriteFile(filepath.Join(stale, "lock"), nil, 0o600)
	orphan := sleeper(t, "PLUGIN_UNIX_SOCKET_DIR="+stale+"/plugin-dir1")
	bystander := sleeper(t, "PLUGIN_UNIX_SOCKET_DIR=/elsewhere/plugin-dir1")
	d := &Dir{Path: stale}
	d.RecordGroup(orphan.Process.Pid)
	d.RecordGroup(bystander.Process.Pid)
	mustOpen(t) // the next run, which sweeps
	if err := orphan.Wait(); err == nil {
		t.Error("the orphan survived the sweep")
	}
	if err := bystander.Process.Signal(syscall.Signal(0)); err != nil {
		t.Errorf("the sweep killed a process without the run's marker: %v", err)
	}
}

// mustOpen is Open for a test: fatal on failure, closed at cleanup.
func mustOpen(t *testing.T) *Dir {
	t.Helper()
	d, err := Open()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close() })
	return d
}

func sleeper(t *testing.T, env string) *exec.Cmd {
	t.Helper()
	cmd := exec.Command("sleep", "30")
	cmd.Env = append(os.Environ(), env)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	return cmd
}
