package shm

import (
	"bytes"
	"errors"
	"fmt"
	"os"

	"golang.org/x/sys/unix"

	"github.com/kvharness/kvharness/harness/arena/internal/baseline"
	"github.com/kvharness/kvharness/harness/pool"
	"github.com/kvharness/kvharness/harness/protocol"
	"github.com/kvharness/kvharness/harness/protocol/fdpass"
	"github.com/kvharness/kvharness/harness/rundir"
)

// Memory is an arena in host shared memory: a 0600 file in a run directory,
// mapped read-write by the harness and by the plugin.
//
// The file is unlinked as soon as it is made: nothing is left in the file
// system however the harness dies, kill -9 included. The harness keeps it
// open and hands its descriptor to the plugin it attaches, alone, over a
// Unix socket in the run directory (package fdpass): the arena's Desc
// names the socket. The harness is not dumpable (plugin.Guard), so no
// other process of the user opens the file through /proc/<pid>/fd.
//
// The baseline is kept as the list of filled windows (package baseline)
// and, per seed, one copy of its background: the pools of a target share
// a seed, so they are all compared against the same bytes, which stay in
// the caches, instead of each against a copy of its own.
type Memory struct {
	file        *os.File
	fds         *fdpass.Server // hands plugins the file's descriptor
	path        string         // the socket plugins receive it at
	mem         []byte
	bl          baseline.Spans
	bg          map[uint64][]byte // seed → its background, as long as its longest dense window
	zeros       []byte            // the baseline of bytes never filled
	piece       []byte            // background of a piece beyond its seed's copy (eachBase)
	clusterBase []byte            // background of a cluster of windows beyond its seed's copy (ChangedIn)
	lazy        lazyPages         // which pages hold their baseline (lazy.go)
	// lazyRanges are the page-aligned stretches FillLazy left as holes.
	lazyRanges []pool.Window
	sparse     bool  // the file is on tmpfs, where holes prove what they prove
	noted      int64 // allocated blocks after the harness's last allocation (lazy.go)
	dirty      bool  // a hole was written before a note (guard, lazy.go)
}

// New creates and maps a shared-memory arena of size bytes in dir.
func New(dir *rundir.Dir, size int) (*Memory, error) { return NewSparse(dir, size, 0) }

// NewSparse is New for an arena whose pages mostly stay holes: resident
// is what its dense fills and materializations will hold at most (0: the
// whole size). Only that must fit; the file is sized without backing the
// rest (a reserve would write every page), so a pool of 4 GiB whose cases
// touch a few windows of it costs those windows. It needs a tmpfs
// directory, where holes are free and a write to one allocates it: on
// another file system a sparse file's holes read back through the page
// cache, and the arena is backed whole as New's.
func NewSparse(dir *rundir.Dir, size, resident int) (*Memory, error) {
	f, err := os.CreateTemp(dir.Path, "arena-")
	if err != nil {
		return nil, fmt.Errorf("create shared-memory file: %w", err)
	}
	os.Remove(f.Name()) // the open file lives on; see the type's comment
	if err := f.Chmod(0o600); err != nil {
		f.Close()
		return nil, err
	}
	sparse := onTmpfs(f)
	if resident <= 0 || resident > size || !sparse {
		resident = size
	}
	if err := checkRoom(dir.Path, int64(resident)); err != nil {
		f.Close()
		return nil, named(err)
	}
	if resident < size {
		err = f.Truncate(int64(size))
	} else {
		err = reserve(f, int64(size))
	}
	if err != nil {
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
		return nil, fmt.Errorf("map %s of shared memory: %w%s", Bytes(int64(size)), err, addressSpaceHint(err))
	}
	fds, err := fdpass.Serve(dir.Path, func() (int, error) { return unix.Dup(int(f.Fd())) })
	if err != nil {
		unix.Munmap(mem)
		f.Close()
		return nil, err
	}
	// A sparse arena's pages start as holes that read as zeros, the
	// baseline of bytes never filled; its caller fills every window it
	// scans, lazily or not, before the first scan.
	return &Memory{file: f, fds: fds, path: fds.Path, mem: mem, bg: map[uint64][]byte{}, lazy: newLazyPages(size), sparse: sparse}, nil
}

// Bytes is the live mapping, for tests and host-side tools.
func (s *Memory) Bytes() []byte { return s.mem }

// Desc implements arena.Memory.
func (s *Memory) Desc() protocol.ArenaDesc {
	return protocol.ArenaDesc{Backend: protocol.BackendSHM, Path: s.path, Size: len(s.mem)}
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
	if s.sparse {
		if err := s.guard(); err != nil {
			return err
		}
	}
	if s.lazy.holes > 0 { // the window may cover holes: back them before writing (allocate)
		if err := s.allocate(w); err != nil {
			return err
		}
	}
	bg := s.background(seed, w.Len)
	if err := s.writeFile(bg[:w.Len], w.Off); err != nil { // see writeFile
		return err
	}
	s.bl.Fill(w, seed)
	s.lazy.dense(w)
	if s.sparse {
		return s.note()
	}
	return nil
}

// chunkBytes is the stretch of zeros compared at a time with bytes never
// filled.
const chunkBytes = 64 << 10

// pieceBytes is the most background computed for one piece beyond a
// seed's copy instead of growing the copy.
const pieceBytes = 256 << 10

// copyBytes is how far a seed's background copy grows to reach the pieces
// asked of it, however small: within it, a lazy pool's pages are
// materialized, scanned and reset by copying and comparing, not by
// computing their background each time (a fuzzed pool of 131,072 bf16
// slots is 32 MiB).
const copyBytes = 64 << 20

// growBytes is the least a seed's background copy grows by: a lazily
// filled window's copy grows as its cases reach further in, instead of
// its background being recomputed for every page materialized or scanned.
const growBytes = 1 << 20

// background is seed's background copy, at least n bytes long, the one
// every arena of the process shares (backgrounds.go). It lives in the
// harness's memory, never in the arena: a window filled lazily keeps its
// holes.
func (s *Memory) background(seed uint64, n int) []byte {
	bg := s.bg[seed]
	if len(bg) >= n {
		return bg
	}
	bg = shared.get(seed, n, len(s.mem))
	s.bg[seed] = bg
	return bg
}

// eachBase calls f over w in stretches of one baseline, with the
// baseline's bytes (never to be written, valid during the call).
func (s *Memory) eachBase(w pool.Window, f func(lo, hi int, base []byte)) {
	if sp, ok := s.bl.Within(w); ok {
		switch to := w.End() - sp.Origin; {
		case to <= len(s.bg[sp.Seed]):
			f(w.Off, w.End(), s.bg[sp.Seed][w.Off-sp.Origin:to])
			return
		case to > copyBytes && w.Len <= pieceBytes:
			// One far piece (below), without building the pieces: a
			// far pool's scans and resets are of thousands of windows.
			if len(s.piece) < pieceBytes {
				s.piece = make([]byte, pieceBytes)
			}
			pool.FillBackground(s.piece[:w.Len], sp.Seed, w.Off-sp.Origin)
			f(w.Off, w.End(), s.piece[:w.Len])
			return
		}
	}
	for _, p := range s.bl.Pieces(w) {
		switch bg := s.bg[p.Seed]; {
		case !p.Filled:
			if len(s.zeros) < min(p.Len, chunkBytes) {
				s.zeros = make([]byte, min(p.Len, chunkBytes))
			}
			for lo := p.Off; lo < p.End(); lo += chunkBytes {
				hi := min(lo+chunkBytes, p.End())
				f(lo, hi, s.zeros[:hi-lo])
			}
		case p.End()-p.Origin > max(len(bg), copyBytes):
			// A piece far beyond the copy (a page deep in a lazy pool
			// of a million slots, a window past 4 GiB of a sparse one):
			// its background alone, a piece at a time, not the copy
			// grown to reach it.
			if len(s.piece) < pieceBytes {
				s.piece = make([]byte, pieceBytes)
			}
			for lo := p.Off; lo < p.End(); lo += pieceBytes {
				hi := min(lo+pieceBytes, p.End())
				pool.FillBackground(s.piece[:hi-lo], p.Seed, lo-p.Origin)
				f(lo, hi, s.piece[:hi-lo])
			}
		default:
			bg = s.background(p.Seed, p.End()-p.Origin)
			f(p.Off, p.End(), bg[p.Off-p.Origin:p.End()-p.Origin])
		}
	}
}

// Changed scans in three passes of shrinking grain: 4 KiB blocks compared
// with one vectorised bytes.Equal, 64-byte lines inside a differing block,
// then words and bytes inside a differing line. A run that wrote a few
// hundred rows costs a memcmp of the pool plus a word loop over those
// rows only.
const (
	block = 4096
	line  = 64
)

// Changed implements arena.Memory. Holes of lazily filled windows are
// skipped, unless the file holds them: see lazy.go.
func (s *Memory) Changed(w pool.Window) ([]pool.Window, error) {
	if err := s.check(w.Off, w.Len); err != nil {
		return nil, err
	}
	var out []pool.Window
	err := s.scan(w, func(lo, hi int, base []byte) {
		for b := lo; b < hi; b += block {
			bh := min(b+block, hi)
			if !bytes.Equal(s.mem[b:bh], base[b-lo:bh-lo]) {
				out = s.appendLines(out, b, bh, base[b-lo:bh-lo])
			}
		}
	})
	return out, err
}

// scan calls f, as eachBase does, over the parts of w that hold bytes to
// compare: every held page, and the holes the file allocated since (one
// mincore call finds them).
func (s *Memory) scan(w pool.Window, f func(lo, hi int, base []byte)) error {
	var ext []pool.Window // w's allocated pages, once a hole is known written
	var err error
	asked, written := false, false // one fstat a scan, not one a stretch of holes
	s.pages(w, func(lo, hi int, held bool) {
		if held {
			s.eachBase(pool.Window{Off: lo, Len: hi - lo}, f)
			return
		}
		if !asked {
			asked = true
			if written, err = s.holesWritten(); written && err == nil {
				ext, err = s.allocated(w)
			}
		}
		if !written || err != nil {
			return // no hole was written anywhere
		}
		// The stretch's pages the file holds: every one a stray write.
		for _, e := range ext {
			if a, b := max(e.Off, lo), min(e.End(), hi); a < b {
				s.eachBase(pool.Window{Off: a, Len: b - a}, f)
			}
		}
	})
	return err
}

// ChangedIn implements arena.WindowScanner: Changed over each window of
// ws, with the changed bytes. Windows must be sorted and must not touch,
// so that no range runs from one into the next. Close windows are
// compared in clusters against one baseline (cluster).
func (s *Memory) ChangedIn(ws []pool.Window) ([]pool.Window, []byte, error) {
	var out []pool.Window
	var got []byte
	for i := 0; i < len(ws); {
		j, base := s.cluster(ws, i)
		for k := i; k < j; k++ {
			w := ws[k]
			if err := s.check(w.Off, w.Len); err != nil {
				return nil, nil, err
			}
			n := len(out)
			if base != nil {
				b := base(w)
				if !bytes.Equal(s.mem[w.Off:w.End()], b) {
					out = s.appendLines(out, w.Off, w.End(), b)
				}
			} else if err := s.scan(w, func(lo, hi int, base []byte) {
				if !bytes.Equal(s.mem[lo:hi], base) {
					out = s.appendLines(out, lo, hi, base)
				}
			}); err != nil {
				return nil, nil, err
			}
			if got == nil && len(out) > n {
				got = make([]byte, 0, pool.Total(ws[k:])) // no more than the windows left hold
			}
			for _, r := range out[n:] {
				got = append(got, s.mem[r.Off:r.End()]...)
			}
		}
		i = j
	}
	return out, got, nil
}

// clusterBytes is the most a cluster of windows spans.
const clusterBytes = 64 << 10

// cluster returns the end j of the windows from ws[i] that ChangedIn
// compares against one baseline, with a function giving a window's
// baseline bytes: an engine cache's case is hundreds of thousands of
// small windows (vLLM's paged V: two bytes a head element), and each
// would otherwise cost a walk of the baseline's pieces and of the held
// pages. A cluster lies inside the arena, in held pages and one filled
// span of the baseline; else base is nil and j is i+1, and the window is
// scanned alone. Either way the changed ranges are the same: maximal runs
// of bytes that differ from the baseline.
func (s *Memory) cluster(ws []pool.Window, i int) (int, func(pool.Window) []byte) {
	j := i + 1
	for j < len(ws) && ws[j].End()-ws[i].Off <= clusterBytes {
		j++
	}
	if j-i < 2 {
		return i + 1, nil
	}
	span := pool.Window{Off: ws[i].Off, Len: ws[j-1].End() - ws[i].Off}
	if span.Off < 0 || span.End() > len(s.mem) || !s.held(span) {
		return i + 1, nil
	}
	sp, ok := s.bl.Within(span)
	if !ok {
		return i + 1, nil
	}
	if to := span.End() - sp.Origin; to <= max(len(s.bg[sp.Seed]), copyBytes) {
		bg := s.background(sp.Seed, to) // grown to reach it, as eachBase grows it
		return j, func(w pool.Window) []byte { return bg[w.Off-sp.Origin : w.End()-sp.Origin] }
	}
	// Beyond the copy: each window's background alone (not the gaps'),
	// as eachBase computes a far piece's.
	if len(s.clusterBase) < clusterBytes {
		s.clusterBase = make([]byte, clusterBytes)
	}
	return j, func(w pool.Window) []byte {
		b := s.clusterBase[:w.Len]
		pool.FillBackground(b, sp.Seed, w.Off-sp.Origin)
		return b
	}
}

// held reports whether every page of w holds its baseline as bytes.
func (s *Memory) held(w pool.Window) bool {
	if s.lazy.holes == 0 {
		return true
	}
	last := (w.End() + pageBytes - 1) / pageBytes
	end, held := s.lazy.run(w.Off/pageBytes, last)
	return held && end >= last
}

// appendLines adds the changed ranges of [lo, hi), whose baseline is
// base, line by line.
func (s *Memory) appendLines(out []pool.Window, lo, hi int, base []byte) []pool.Window {
	for l := lo; l < hi; l += line {
		lh := min(l+line, hi)
		if !bytes.Equal(s.mem[l:lh], base[l-lo:lh-lo]) {
			out = appendRuns(out, s.mem[l:lh], base[l-lo:lh-lo], l)
		}
	}
	return out
}

// Reset implements arena.Memory. A range in a hole the file allocated
// (a stray write) materializes the hole's pages instead.
func (s *Memory) Reset(ws []pool.Window) error {
	return s.materializeHoles(ws, func(lo, hi int) { s.writeBase(pool.Window{Off: lo, Len: hi - lo}) })
}

// Close unmaps the arena and closes its file, which frees it.
func (s *Memory) Close() error {
	err := errors.Join(s.fds.Close(), unix.Munmap(s.mem))
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
