package pool

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

	"github.com/google/go-cmp/cmp"

	"github.com/kvharness/kvharness/harness/layout"
)

func shm(t *testing.T, size int) (*SHM, *Dir) {
	t.Helper()
	t.Setenv("KVHARNESS_RUNTIME_DIR", t.TempDir())
	d, err := OpenDir()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close() })
	m, err := NewSHM(d, size)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close() })
	return m, d
}

func TestChangedFindsExactRanges(t *testing.T) {
	m, _ := shm(t, 64<<10)
	w := Window{4096, 40 << 10}
	if err := m.Fill(w, 9); err != nil {
		t.Fatal(err)
	}
	// Unaligned writes straddling line and block edges, and one byte equal
	// to the background (not a change).
	writes := []Window{{4096, 1}, {4096 + 63, 2}, {8191, 3}, {20000, 300}}
	for _, x := range writes {
		b := make([]byte, x.Len)
		m.ReadAt(b, x.Off)
		for i := range b {
			b[i] ^= 0xff
		}
		m.WriteAt(b, x.Off)
	}
	same := make([]byte, 1)
	m.ReadAt(same, 30000)
	m.WriteAt(same, 30000)
	got, err := m.Changed(w)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(writes, got); diff != "" {
		t.Errorf("Changed (-want +got):\n%s", diff)
	}
	if err := m.Reset(got); err != nil {
		t.Fatal(err)
	}
	if again, _ := m.Changed(w); len(again) != 0 {
		t.Errorf("after Reset: %v", again)
	}
}

func TestFillIsPositionIndependent(t *testing.T) {
	m, _ := shm(t, 32<<10)
	m.Fill(Window{0, 8192}, 3)
	m.Fill(Window{16384, 8192}, 3)
	a, b := make([]byte, 8192), make([]byte, 8192)
	m.ReadAt(a, 0)
	m.ReadAt(b, 16384)
	if diff := cmp.Diff(a, b); diff != "" {
		t.Errorf("two windows filled with one seed differ")
	}
	if diff := cmp.Diff(Background(3, 100, 50), a[100:150]); diff != "" {
		t.Errorf("Background(3, 100, 50) disagrees with Fill")
	}
}

func TestBoundsAreChecked(t *testing.T) {
	m, _ := shm(t, 4096)
	if m.WriteAt(make([]byte, 2), 4095) == nil || m.ReadAt(make([]byte, 1), -1) == nil {
		t.Error("out-of-arena access accepted")
	}
	if _, err := m.Changed(Window{4000, 200}); err == nil {
		t.Error("out-of-arena Changed accepted")
	}
}

func TestPlanGuards(t *testing.T) {
	l, _ := layout.Builtin("fp8-paged", 128, 64)
	g, err := Plan([]Spec{{Name: "a", Layout: l, Slots: 100}, {Name: "b", Layout: l, Slots: 1}}, 1000)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range g.Regions {
		if r.GuardBefore.Len < l.PageBytes() || r.GuardAfter.Len < l.PageBytes() || r.Pool.Len < l.PoolBytes(r.Slots) {
			t.Errorf("region %s: guards %d/%d, pool %d", r.Name, r.GuardBefore.Len, r.GuardAfter.Len, r.Pool.Len)
		}
		if r.Pool.Off%Alignment != 0 || r.GuardBefore.End() != r.Pool.Off || r.Pool.End() != r.GuardAfter.Off {
			t.Errorf("region %s misplaced: %+v", r.Name, r)
		}
	}
	if g.Regions[1].GuardBefore.Off != g.Regions[0].GuardAfter.End() || g.Staging.Off != g.Regions[1].GuardAfter.End() {
		t.Error("regions and staging not back to back")
	}
	if _, err := Plan([]Spec{{Name: "x", Layout: l, Slots: 0}}, 0); err == nil {
		t.Error("zero slots accepted")
	}
	if _, err := Plan([]Spec{{Name: "x", Layout: l, Slots: 1 << 40}}, 0); err == nil {
		t.Error("a pool past MaxArenaBytes accepted")
	}
}

func TestDirIsPrivateAndRemoved(t *testing.T) {
	m, d := shm(t, 4096)
	for _, p := range []string{d.Path, filepath.Dir(d.Path)} {
		st, err := os.Stat(p)
		if err != nil || st.Mode().Perm() != 0o700 {
			t.Errorf("%s: mode %v, err %v; want 0700", p, st.Mode(), err)
		}
	}
	st, err := m.file.Stat()
	if err != nil || st.Mode().Perm() != 0o600 {
		t.Errorf("arena file mode %v, err %v; want 0600", st.Mode(), err)
	}
	if entries, _ := os.ReadDir(d.Path); len(entries) != 1 || entries[0].Name() != "lock" {
		t.Errorf("run directory holds %v; the arena file must be unlinked once mapped", entries)
	}
	if _, err := os.Stat(m.Desc().Path); err != nil {
		t.Errorf("plugins cannot open the arena at %s: %v", m.Desc().Path, err)
	}
	m.Close()
	d.Close()
	if _, err := os.Stat(d.Path); !os.IsNotExist(err) {
		t.Errorf("run directory survives Close: %v", err)
	}
}

// A run directory whose owner died (lock free) is swept by the next run; a
// live one is left alone.
func TestStaleDirsAreSwept(t *testing.T) {
	t.Setenv("KVHARNESS_RUNTIME_DIR", t.TempDir())
	live, err := OpenDir()
	if err != nil {
		t.Fatal(err)
	}
	defer live.Close()
	user := filepath.Dir(live.Path)
	stale := filepath.Join(user, "run-999999-dead")
	os.Mkdir(stale, 0o700)
	os.WriteFile(filepath.Join(stale, "lock"), nil, 0o600)
	os.WriteFile(filepath.Join(stale, "arena-1"), []byte("left behind"), 0o600)
	next, err := OpenDir()
	if err != nil {
		t.Fatal(err)
	}
	defer next.Close()
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
	first, err := OpenDir()
	if err != nil {
		t.Fatal(err)
	}
	defer first.Close()
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
		wg.Go(func() { dirs[i], errs[i] = OpenDir() })
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
	if _, err := OpenDir(); err == nil {
		t.Error("a world-writable runtime directory was accepted")
	}
}

// TestSweepKillsOrphans: a run killed with SIGKILL leaves plugin children
// behind; the next run kills the processes of the groups it recorded that
// carry its marker, and nothing else.
func TestSweepKillsOrphans(t *testing.T) {
	t.Setenv("KVHARNESS_RUNTIME_DIR", t.TempDir())
	live, err := OpenDir()
	if err != nil {
		t.Fatal(err)
	}
	defer live.Close()
	stale := filepath.Join(filepath.Dir(live.Path), "run-999998-dead")
	os.Mkdir(stale, 0o700)
	os.WriteFile(filepath.Join(stale, "lock"), nil, 0o600)
	orphan := sleeper(t, "PLUGIN_UNIX_SOCKET_DIR="+stale+"/plugin-dir1")
	bystander := sleeper(t, "PLUGIN_UNIX_SOCKET_DIR=/elsewhere/plugin-dir1")
	d := &Dir{Path: stale}
	d.RecordGroup(orphan.Process.Pid)
	d.RecordGroup(bystander.Process.Pid)
	next, err := OpenDir()
	if err != nil {
		t.Fatal(err)
	}
	defer next.Close()
	if err := orphan.Wait(); err == nil {
		t.Error("the orphan survived the sweep")
	}
	if err := bystander.Process.Signal(syscall.Signal(0)); err != nil {
		t.Errorf("the sweep killed a process without the run's marker: %v", err)
	}
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
