package cuda

import (
	"bytes"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
)

// Environment of the shared-memory child: the arena's size (its file
// descriptor is inherited as fd 3).
const envSharedSize = "KVHARNESS_TEST_SHARED_SIZE"

// sharedChild returns a command running the test named run in a child with
// s's file descriptor as fd 3; the caller runs it and closes the file.
func sharedChild(t *testing.T, s *Shared, run string, env ...string) (*exec.Cmd, *os.File) {
	t.Helper()
	fd, err := s.ExportFD()
	must(t, err)
	f := os.NewFile(uintptr(fd), "shared-arena")
	cmd := exec.Command(os.Args[0], "-test.run=^"+run+"$", "-test.v")
	cmd.Env = append(os.Environ(), env...)
	cmd.ExtraFiles = []*os.File{f}
	return cmd, f
}

// TestShared exports shareable memory by file descriptor to a child
// process, which maps it and writes a pattern the parent must see.
func TestShared(t *testing.T) {
	d := openDevice(t)
	const n = 3 << 20 // rounds up to the granularity
	s, err := d.AllocShared(n)
	must(t, err)
	t.Cleanup(func() { must(t, s.Free()) })
	if s.Size() < n || s.Ptr() == 0 {
		t.Fatalf("AllocShared(%d): size %d at %#x", n, s.Size(), s.Ptr())
	}
	if s.Ptr()%(2<<20) != 0 {
		t.Errorf("AllocShared mapped at %#x; want a 2 MiB aligned address", s.Ptr())
	}
	must(t, d.Memset8(s.Ptr(), 0, s.Size()))
	cmd, f := sharedChild(t, s, "TestSharedChild", envSharedSize+"="+strconv.Itoa(s.Size()))
	defer f.Close()
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "--- PASS: TestSharedChild") {
		t.Fatalf("shared-memory child failed: %v\n%s", err, out)
	}
	got := make([]byte, n)
	must(t, d.DtoH(got, s.Ptr()))
	if !bytes.Equal(got, ipcPattern(n)) {
		t.Fatal("the parent does not see the child's write through the shared mapping")
	}
	if _, err := d.ImportShared(-1, s.Size()); err == nil {
		t.Error("ImportShared of fd -1 succeeded")
	}
	if _, err := d.ImportShared(3, s.Size()+1); err == nil {
		t.Error("ImportShared of a size off the granularity succeeded")
	}
}

// TestSharedChild is the child of TestShared; on its own it skips.
func TestSharedChild(t *testing.T) {
	v := os.Getenv(envSharedSize)
	if v == "" {
		t.Skip("runs only as the child process of TestShared")
	}
	size, err := strconv.Atoi(v)
	must(t, err)
	d := openDevice(t)
	s, err := d.ImportShared(3, size)
	must(t, err)
	defer s.Free()
	must(t, d.HtoD(s.Ptr(), ipcPattern(3<<20)))
	must(t, d.Sync())
}
