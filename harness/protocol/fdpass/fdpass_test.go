package fdpass

import (
	"context"
	"errors"
	"fmt"
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

// TestReceiveMany: a sparse CUDA arena is one descriptor per piece; they
// arrive together, in the order exported, each a working descriptor; a
// single-descriptor Receive refuses them rather than taking the first;
// and an exporter with more than MaxFDs is refused with its count.
func TestReceiveMany(t *testing.T) {
	dir := t.TempDir()
	var files []*os.File
	for i := range 3 {
		f, err := os.Create(fmt.Sprintf("%s/piece%d", dir, i))
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		if _, err := f.WriteString(fmt.Sprintf("piece %d", i)); err != nil {
			t.Fatal(err)
		}
		files = append(files, f)
	}
	s, err := ServeMany("", func() ([]int, error) {
		var fds []int
		for _, f := range files {
			fd, err := syscall.Dup(int(f.Fd()))
			if err != nil {
				return nil, err
			}
			fds = append(fds, fd)
		}
		return fds, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	fds, err := ReceiveMany(ctx, s.Path)
	if err != nil {
		t.Fatal(err)
	}
	if len(fds) != 3 {
		t.Fatalf("received %d descriptors, want 3", len(fds))
	}
	for i, fd := range fds {
		buf := make([]byte, 16)
		n, err := syscall.Pread(fd, buf, 0)
		syscall.Close(fd)
		if want := fmt.Sprintf("piece %d", i); err != nil || string(buf[:n]) != want {
			t.Errorf("descriptor %d reads %q, %v; want %q", i, buf[:n], err, want)
		}
	}
	if fd, err := Receive(ctx, s.Path); err == nil || !strings.Contains(err.Error(), "sent 3 descriptors; want 1") {
		syscall.Close(fd)
		t.Errorf("Receive of three descriptors: %v; want a refusal naming the count", err)
	}
	tooMany, err := ServeMany("", func() ([]int, error) {
		fds := make([]int, MaxFDs+1)
		for i := range fds {
			var err error
			if fds[i], err = syscall.Dup(int(files[0].Fd())); err != nil {
				return nil, err
			}
		}
		return fds, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { tooMany.Close() })
	if _, err := ReceiveMany(ctx, tooMany.Path); err == nil || !strings.Contains(err.Error(), fmt.Sprintf("%d descriptors to send", MaxFDs+1)) {
		t.Errorf("ReceiveMany of %d descriptors: %v; want the export refused with the count", MaxFDs+1, err)
	}
}
