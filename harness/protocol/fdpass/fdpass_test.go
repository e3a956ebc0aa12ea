package fdpass

import (
	"context"
	"errors"
	"os"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

// serve starts a Server in a fresh directory with the given export
// function and closes it when the test ends (a test may close it first,
// to check what Close does).
func serve(t *testing.T, export func() (int, error)) *Server {
	t.Helper()
	s, err := Serve(t.TempDir(), export)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// exportFails is an export function that fails with message.
func exportFails(message string) func() (int, error) {
	return func() (int, error) { return -1, errors.New(message) }
}

// TestReceiveSameFile serves a temporary file's descriptor and checks that
// what two clients receive is that file: a write through one shows through
// the other, and each got a descriptor of its own.
func TestReceiveSameFile(t *testing.T) {
	f, err := os.CreateTemp(t.TempDir(), "arena")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var exports atomic.Int32
	s := serve(t, func() (int, error) {
		exports.Add(1)
		return syscall.Dup(int(f.Fd()))
	})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	a, err := Receive(ctx, s.Path)
	if err != nil {
		t.Fatal(err)
	}
	defer syscall.Close(a)
	b, err := Receive(ctx, s.Path)
	if err != nil {
		t.Fatal(err)
	}
	defer syscall.Close(b)
	if a == b || a == int(f.Fd()) {
		t.Fatalf("descriptors %d and %d (file %d): want distinct ones", a, b, f.Fd())
	}
	if _, err := syscall.Pwrite(a, []byte("kv"), 100); err != nil {
		t.Fatal(err)
	}
	got := make([]byte, 2)
	if _, err := syscall.Pread(b, got, 100); err != nil || string(got) != "kv" {
		t.Fatalf("read through the second descriptor: %q, %v; want \"kv\"", got, err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if n := exports.Load(); n != 2 {
		t.Errorf("exported %d times for 2 connections", n)
	}
	if _, err := os.Stat(s.Path); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("socket %s still there after Close: %v", s.Path, err)
	}
	if _, err := Receive(ctx, s.Path); err == nil || !strings.Contains(err.Error(), "connect") {
		t.Errorf("Receive after Close: %v; want a connect error", err)
	}
}

// TestReceiveExportError passes the harness's export failure on, worded.
func TestReceiveExportError(t *testing.T) {
	s := serve(t, exportFails("cuMemExportToShareableHandle: out of memory"))
	_, err := Receive(context.Background(), s.Path)
	if err == nil || !strings.Contains(err.Error(), "could not export the arena: cuMemExportToShareableHandle: out of memory") ||
		!strings.Contains(err.Error(), "KVHARNESS_CUDA_SHARING=ipc") {
		t.Fatalf("Receive: %v; want the export error and the way around it", err)
	}
}

// TestSocketPrivate: the socket's directory admits its owner only.
func TestSocketPrivate(t *testing.T) {
	s := serve(t, exportFails("unused"))
	st, err := os.Stat(s.dir)
	if err != nil {
		t.Fatal(err)
	}
	if st.Mode().Perm() != 0o700 {
		t.Errorf("socket directory mode %v; want 0700", st.Mode().Perm())
	}
}

// TestReceiveCancelled: a Receive whose call is cancelled stops waiting
// for a harness that does not answer, and says why.
func TestReceiveCancelled(t *testing.T) {
	release := make(chan struct{})
	s := serve(t, func() (int, error) {
		<-release
		return -1, errors.New("too late")
	})
	defer close(release) // before the cleanup's Close: the server's send is waiting on it
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(50*time.Millisecond, cancel)
	start := time.Now()
	_, err := Receive(ctx, s.Path)
	if err == nil || !errors.Is(err, context.Canceled) || time.Since(start) > 5*time.Second {
		t.Fatalf("Receive after cancel: %v after %v; want context.Canceled promptly", err, time.Since(start))
	}
}
