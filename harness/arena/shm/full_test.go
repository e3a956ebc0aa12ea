package shm

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/kvharness/kvharness/harness/pool"
)

// TestFullTmpfsIsAnError: a tmpfs that fills up while an arena holds a
// lazily filled window as holes (another process wrote there) makes
// Materialize and Fill return a SpaceError naming the directory, instead
// of the SIGBUS a write through the mapping into an unbackable hole
// raises. It mounts a tmpfs of its own, so it runs as root only.
func TestFullTmpfsIsAnError(t *testing.T) {
	dir := t.TempDir()
	if err := unix.Mount("tmpfs", dir, "tmpfs", 0, "size=8m"); err != nil {
		t.Skipf("mount a small tmpfs: %v (needs root)", err)
	}
	t.Cleanup(func() { unix.Unmount(dir, unix.MNT_DETACH) })
	m, _ := openIn(t, dir, 4<<20)
	if !m.Sparse() {
		t.Fatal("an arena on tmpfs is not sparse")
	}
	w := pool.Window{Off: 0, Len: 4 << 20}
	if err := m.FillLazy(w, 7); err != nil {
		t.Fatal(err)
	}
	// Another process fills the file system to its last byte.
	filler, err := os.Create(filepath.Join(dir, "filler"))
	if err != nil {
		t.Fatal(err)
	}
	defer filler.Close()
	chunk := make([]byte, 1<<16)
	for {
		if _, err := filler.Write(chunk); err != nil {
			break
		}
	}
	err = m.Materialize([]pool.Window{{Off: 1 << 20, Len: 1 << 20}})
	var se *SpaceError
	if !errors.As(err, &se) || !se.Grew || !strings.Contains(err.Error(), "filled up during the run") {
		t.Fatalf("Materialize on a full tmpfs: %v; want a SpaceError saying it filled up", err)
	}
	if err := m.Fill(pool.Window{Off: 2 << 20, Len: 1 << 20}, 3); !errors.As(err, &se) {
		t.Fatalf("Fill over holes on a full tmpfs: %v; want a SpaceError", err)
	}
	filler.Truncate(0) // room again: the same calls succeed
	if err := m.Materialize([]pool.Window{{Off: 1 << 20, Len: 1 << 20}}); err != nil {
		t.Errorf("Materialize once there is room: %v", err)
	}
}
