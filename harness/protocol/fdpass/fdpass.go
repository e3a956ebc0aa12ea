// Package fdpass hands a file descriptor from the harness to a plugin
// process over a Unix socket (SCM_RIGHTS). A CUDA arena allocated with the
// virtual memory API is shared as a POSIX file descriptor, and a file
// descriptor cannot travel in a gRPC message: the harness serves one
// socket per arena in a directory only its user can enter, and every
// connection receives fresh descriptors for the same memory: one for a
// file or a dense allocation, one per backed piece for a sparse one.
package fdpass

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"sync"
	"syscall"
	"time"
)

// Server hands out descriptors at Path until Close, to the plugins it may
// (peers.go).
type Server struct {
	Path string

	dir     string
	ln      *net.UnixListener
	export  func() ([]int, error)
	wg      sync.WaitGroup
	mu      sync.Mutex
	granted map[int]bool // process groups Grant named
}

// Serve listens on a new socket in a private directory under base ("" for
// the system's temporary directory). Each connection gets one descriptor
// from export, which the server closes after sending.
func Serve(base string, export func() (int, error)) (*Server, error) {
	return ServeMany(base, func() ([]int, error) {
		fd, err := export()
		if err != nil {
			return nil, err
		}
		return []int{fd}, nil
	})
}

// MaxFDs is how many descriptors one connection may carry: the kernel
// passes at most 253 in one message (SCM_MAX_FD).
const MaxFDs = 250

// ServeMany is Serve for memory shared as several descriptors (at most
// MaxFDs), all sent in one message, in export's order.
func ServeMany(base string, export func() ([]int, error)) (*Server, error) {
	dir, err := os.MkdirTemp(base, "fd-") // short: a socket's path holds at most 107 bytes
	if err != nil {
		return nil, fmt.Errorf("fd socket directory: %w", err)
	}
	s := &Server{Path: filepath.Join(dir, "s"), dir: dir, export: export, granted: map[int]bool{}}
	s.ln, err = net.ListenUnix("unix", &net.UnixAddr{Name: s.Path, Net: "unix"})
	if err != nil {
		os.RemoveAll(dir)
		return nil, fmt.Errorf("fd socket: %w", err)
	}
	servers.Lock()
	servers.byPath[s.Path] = s
	servers.Unlock()
	s.wg.Add(1)
	go s.accept()
	return s, nil
}

// accept serves connections until Close. Other accept errors (out of
// descriptors, an aborted connection) pass: a later connection may work.
func (s *Server) accept() {
	defer s.wg.Done()
	for {
		c, err := s.ln.AcceptUnix()
		if errors.Is(err, net.ErrClosed) {
			return
		}
		if err != nil {
			time.Sleep(10 * time.Millisecond)
			continue
		}
		s.wg.Add(1)
		go func() {
			defer s.wg.Done()
			defer c.Close()
			s.send(c)
		}()
	}
}

// send writes the descriptors, or on an export failure a message the
// receiver reports: a byte 0 means descriptors follow, 1 an error text,
// 2 a refusal (the peer is not a plugin the arena was given to).
func (s *Server) send(c *net.UnixConn) {
	if err := s.allowed(c); err != nil {
		c.Write(append([]byte{2}, err.Error()...))
		return
	}
	fds, err := s.export()
	if err == nil && (len(fds) == 0 || len(fds) > MaxFDs) {
		closeAll(fds)
		err = fmt.Errorf("%d descriptors to send, want 1 to %d", len(fds), MaxFDs)
	}
	if err != nil {
		c.Write(append([]byte{1}, err.Error()+"; set KVHARNESS_CUDA_SHARING=ipc to share arenas by IPC handle instead"...))
		return
	}
	defer closeAll(fds)
	c.WriteMsgUnix([]byte{0}, syscall.UnixRights(fds...), nil)
}

// Close stops serving, waits for connections in flight and removes the
// socket's directory. Descriptors already received stay valid.
func (s *Server) Close() error {
	if s == nil {
		return nil
	}
	servers.Lock()
	delete(servers.byPath, s.Path)
	servers.Unlock()
	err := s.ln.Close()
	s.wg.Wait()
	return errors.Join(err, os.RemoveAll(s.dir))
}

// Receive connects to the socket at path and returns the descriptor it
// hands out; the caller closes it.
func Receive(ctx context.Context, path string) (int, error) {
	fds, err := ReceiveMany(ctx, path)
	if err != nil {
		return -1, err
	}
	if len(fds) != 1 {
		closeAll(fds)
		return -1, fmt.Errorf("the fd socket sent %d descriptors; want 1", len(fds))
	}
	return fds[0], nil
}

// ReceiveMany is Receive for a server that ServeMany started: the
// descriptors in the order it sent them; the caller closes them.
func ReceiveMany(ctx context.Context, path string) ([]int, error) {
	var d net.Dialer
	conn, err := d.DialContext(ctx, "unix", path)
	if err != nil {
		return nil, fmt.Errorf("connect to the harness's fd socket: %w (the harness must still hold the arena)", err)
	}
	defer conn.Close()
	c := conn.(*net.UnixConn)
	stop := context.AfterFunc(ctx, func() { c.SetReadDeadline(time.Now()) }) // a cancelled call stops waiting
	defer stop()
	buf := make([]byte, 4096)
	oob := make([]byte, syscall.CmsgSpace(4*MaxFDs))
	n, oobn, flags, _, err := c.ReadMsgUnix(buf, oob)
	if err != nil {
		return nil, fmt.Errorf("receive the arena's descriptor: %w", errors.Join(err, ctx.Err()))
	}
	fds, perr := fdsOf(oob[:oobn])
	switch {
	case flags&syscall.MSG_CTRUNC != 0:
		closeAll(fds)
		return nil, errors.New("receive the arena's descriptor: the kernel dropped it (this process is out of file descriptors: raise ulimit -n)")
	case n > 0 && buf[0] == 1:
		closeAll(fds)
		return nil, fmt.Errorf("the harness could not export the arena: %s", buf[1:n])
	case n > 0 && buf[0] == 2:
		closeAll(fds)
		return nil, fmt.Errorf("the harness refused the arena to this process: %s", buf[1:n])
	case perr != nil:
		return nil, perr
	case n != 1 || buf[0] != 0 || len(fds) == 0:
		closeAll(fds)
		return nil, fmt.Errorf("the fd socket sent %d bytes and %d descriptors; want 1 and at least 1", n, len(fds))
	}
	return fds, nil
}

func fdsOf(oob []byte) ([]int, error) {
	msgs, err := syscall.ParseSocketControlMessage(oob)
	if err != nil {
		return nil, fmt.Errorf("parse the fd socket's control message: %w", err)
	}
	var fds []int
	for _, m := range msgs {
		got, err := syscall.ParseUnixRights(&m)
		if err != nil {
			closeAll(fds)
			return nil, fmt.Errorf("parse the fd socket's rights: %w", err)
		}
		fds = append(fds, got...)
	}
	return fds, nil
}

func closeAll(fds []int) {
	for _, fd := range fds {
		syscall.Close(fd)
	}
}
