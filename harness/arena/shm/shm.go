package shm

import (
	"bytes"
	"errors"
	"fmt"
	"os"

	"golang.org/x/sys/unix"

	"github.com/kvharness/kvharness/harness/pool"
	"github.com/kvharness/kvharness/harness/protocol/kvpb"
	"github.com/kvharness/kvharness/harness/rundir"
)

// Memory is an arena in host shared memory: a 0600 file in a run directory,
// mapped read-write by the harness and by the plugin.
//
// The file is unlinked as soon as it is mapped. The harness keeps it open
// and hands plugins /proc/<pid>/fd/<n>, which opens the same file: nothing
// is left in the file system however the harness dies, kill -9 included.
type Memory struct {
	file     *os.File
	path     string // what plugins open
	mem      []byte
	baseline []byte // background of filled windows, same offsets as mem
}

// New creates and maps a shared-memory arena of size bytes in dir.
func New(dir *rundir.Dir, size int) (*Memory, error) {
	f, err := os.CreateTemp(dir.Path, "arena-")
	if err != nil {
		return nil, fmt.Errorf("create shared-memory file: %w", err)
	}
	os.Remove(f.Name()) // the open file lives on; see the type's comment
	if err := f.Chmod(0o600); err != nil {
		f.Close()
		return nil, err
	}
	if err := checkRoom(dir.Path, int64(size)); err != nil {
		f.Close()
		return nil, named(err)
	}
	if err := reserve(f, int64(size)); err != nil {
		f.Close()
		if errors.Is(err, unix.ENOSPC) {
			free, _ := freeSpace(dir.Path)
			return nil, named(&SpaceError{Need: int64(size), Free: free, Dir: dir.Path, Instead: roomFor(int64(size), dir.Path)})
		}
		return nil, fmt.Errorf("reserve %d bytes of shared memory in %s: %w", size, dir.Path, err)
	}
	mem, err := unix.Mmap(int(f.Fd()), 0, size, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("map shared memory: %w", err)
	}
	path := fmt.Sprintf("/proc/%d/fd/%d", os.Getpid(), f.Fd())
	return &Memory{file: f, path: path, mem: mem, baseline: make([]byte, size)}, nil
}

// Bytes is the live mapping, for tests and host-side tools.
func (s *Memory) Bytes() []byte { return s.mem }

// Desc implements arena.Memory.
func (s *Memory) Desc() *kvpb.Arena {
	return &kvpb.Arena{Backend: kvpb.Backend_BACKEND_SHM, Path: s.path, Size: uint64(len(s.mem))}
}

func (s *Memory) check(off, n int) error {
	if off < 0 || n < 0 || off+n > len(s.mem) {
		return fmt.Errorf("arena range [%d,%d) outside [0,%d)", off, off+n, len(s.mem))
	}
	return nil
}

// ReadAt implements arena.Memory.
func (s *Memory) ReadAt(p []byte, off int) error {
	if err := s.check(off, len(p)); err != nil {
		return err
	}
	copy(p, s.mem[off:])
	return nil
}

// WriteAt implements arena.Memory.
func (s *Memory) WriteAt(p []byte, off int) error {
	if err := s.check(off, len(p)); err != nil {
		return err
	}
	copy(s.mem[off:], p)
	return nil
}

// Fill implements arena.Memory.
func (s *Memory) Fill(w pool.Window, seed uint64) error {
	if err := s.check(w.Off, w.Len); err != nil {
		return err
	}
	pool.FillBackground(s.baseline[w.Off:w.End()], seed, 0)
	copy(s.mem[w.Off:w.End()], s.baseline[w.Off:w.End()])
	return nil
}

// Changed scans in three passes of shrinking grain: 4 KiB blocks compared
// with one vectorised bytes.Equal, 64-byte lines inside a differing block,
// then single bytes inside a differing line. A run that wrote a few hundred
// rows costs a memcmp of the pool plus a byte loop over those rows only.
const (
	block = 4096
	line  = 64
)

// Changed implements arena.Memory.
func (s *Memory) Changed(w pool.Window) ([]pool.Window, error) {
	if err := s.check(w.Off, w.Len); err != nil {
		return nil, err
	}
	var out []pool.Window
	for lo := w.Off; lo < w.End(); lo += block {
		hi := min(lo+block, w.End())
		if bytes.Equal(s.mem[lo:hi], s.baseline[lo:hi]) {
			continue
		}
		for l := lo; l < hi; l += line {
			lh := min(l+line, hi)
			if !bytes.Equal(s.mem[l:lh], s.baseline[l:lh]) {
				out = s.appendBytes(out, l, lh)
			}
		}
	}
	return out, nil
}

// appendBytes adds the differing bytes of [lo, hi) to out, merging with
// the last window when adjacent.
func (s *Memory) appendBytes(out []pool.Window, lo, hi int) []pool.Window {
	for i := lo; i < hi; i++ {
		if s.mem[i] == s.baseline[i] {
			continue
		}
		if n := len(out); n > 0 && out[n-1].End() == i {
			out[n-1].Len++
		} else {
			out = append(out, pool.Window{Off: i, Len: 1})
		}
	}
	return out
}

// Reset implements arena.Memory.
func (s *Memory) Reset(ws []pool.Window) error {
	for _, w := range ws {
		if err := s.check(w.Off, w.Len); err != nil {
			return err
		}
		copy(s.mem[w.Off:w.End()], s.baseline[w.Off:w.End()])
	}
	return nil
}

// Close unmaps the arena and closes its file, which frees it.
func (s *Memory) Close() error {
	err := unix.Munmap(s.mem)
	if cerr := s.file.Close(); err == nil {
		err = cerr
	}
	return err
}

// named makes a space error name the runtime root the user can change
// (KVHARNESS_RUNTIME_DIR) rather than the run directory, which is gone
// by the time the message is read.
func named(err error) error {
	var se *SpaceError
	if errors.As(err, &se) && se.Dir != "" {
		se.Dir = rundir.RuntimeRoot()
	}
	return err
}
