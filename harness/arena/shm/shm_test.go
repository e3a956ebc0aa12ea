package shm

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"golang.org/x/sys/unix"

	"github.com/kvharness/kvharness/harness/pool"
	"github.com/kvharness/kvharness/harness/protocol/fdpass"
	"github.com/kvharness/kvharness/harness/rundir"
)

func open(t *testing.T, size int) (*Memory, *rundir.Dir) {
	t.Helper()
	return openIn(t, t.TempDir(), size)
}

// openIn is an arena of size bytes in a run directory under root.
func openIn(t *testing.T, root string, size int) (*Memory, *rundir.Dir) {
	t.Helper()
	t.Setenv("KVHARNESS_RUNTIME_DIR", root)
	d, err := rundir.Open()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close() })
	m, err := New(d, size)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close() })
	return m, d
}

func TestChangedFindsExactRanges(t *testing.T) {
	m, _ := open(t, 64<<10)
	w := pool.Window{Off: 4096, Len: 40 << 10}
	if err := m.Fill(w, 9); err != nil {
		t.Fatal(err)
	}
	// Unaligned writes straddling line and block edges, and one byte equal
	// to the background (not a change).
	writes := []pool.Window{{Off: 4096, Len: 1}, {Off: 4096 + 63, Len: 2}, {Off: 8191, Len: 3}, {Off: 20000, Len: 300}}
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
	m, _ := open(t, 32<<10)
	m.Fill(pool.Window{Off: 0, Len: 8192}, 3)
	m.Fill(pool.Window{Off: 16384, Len: 8192}, 3)
	a, b := make([]byte, 8192), make([]byte, 8192)
	m.ReadAt(a, 0)
	m.ReadAt(b, 16384)
	if diff := cmp.Diff(a, b); diff != "" {
		t.Errorf("two windows filled with one seed differ")
	}
	if diff := cmp.Diff(pool.Background(3, 100, 50), a[100:150]); diff != "" {
		t.Errorf("pool.Background(3, 100, 50) disagrees with Fill")
	}
}

func TestBoundsAreChecked(t *testing.T) {
	m, _ := open(t, 4096)
	if m.WriteAt(make([]byte, 2), 4095) == nil || m.ReadAt(make([]byte, 1), -1) == nil {
		t.Error("out-of-arena access accepted")
	}
	if _, err := m.Changed(pool.Window{Off: 4000, Len: 200}); err == nil {
		t.Error("out-of-arena Changed accepted")
	}
}

func TestDirIsPrivateAndRemoved(t *testing.T) {
	m, d := open(t, 4096)
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
	entries, _ := os.ReadDir(d.Path)
	if len(entries) != 2 || !strings.HasPrefix(entries[0].Name(), "fd-") || entries[1].Name() != "lock" {
		t.Errorf("run directory holds %v; want the lock and the arena's socket folder: the arena file must be unlinked once mapped", entries)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	fd, err := fdpass.Receive(ctx, m.Desc().Path) // this process asks: a plugin linked in
	if err != nil {
		t.Fatalf("plugins cannot receive the arena at %s: %v", m.Desc().Path, err)
	}
	var got, want unix.Stat_t
	unix.Fstat(fd, &got)
	unix.Fstat(int(m.file.Fd()), &want)
	unix.Close(fd)
	if got.Ino != want.Ino || got.Dev != want.Dev {
		t.Errorf("received inode %d, the arena is %d", got.Ino, want.Ino)
	}
	m.Close()
	d.Close()
	if _, err := os.Stat(d.Path); !os.IsNotExist(err) {
		t.Errorf("run directory survives Close: %v", err)
	}
}
