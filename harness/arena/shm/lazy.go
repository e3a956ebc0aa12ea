package shm

import (
	"errors"
	"fmt"
	"io"
	"math/bits"
	"os"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/kvharness/kvharness/harness/pool"
	"github.com/kvharness/kvharness/harness/rundir"
)

// Lazily filled windows. A pool of a million slots is 256 MiB of bf16
// rows; three of them per target, filled with the background and scanned
// whole after every case, would cost seconds to fill and milliseconds a
// case. A window filled lazily (FillLazy) keeps its background as a rule,
// not as bytes: its pages are holes of the sparse file until Materialize
// writes the background into the ones a case's rows name.
//
// A hole is the proof that nobody wrote there. Writing a page of a tmpfs
// file allocates it, whoever writes (the plugin through its own mapping,
// another process, write(2)): the file's block count grows and mincore
// reports the page resident. The harness reads holes only with mincore,
// and reading a hole through a mapping allocates nothing, so a resident
// page it never materialized is a stray write, found without reading the
// rest of the pool. Changed reports such a page's bytes against the
// background (a hole reads as zeros, so those ranges are not the exact
// ones) and Strays names it; Reset materializes it, and a run repeated on
// it is exact.
//
// Pages are the arena's own 4 KiB pages; a page only partly inside a lazy
// window is materialized when the window is filled and stays so.
const pageBytes = 4096

// lazyPages has a bit per arena page, set when the page holds its baseline
// as bytes (filled densely, outside any lazy window, or materialized).
type lazyPages struct {
	held  []uint64
	holes int // pages whose bit is clear
	lazy  int // pages inside lazy windows, held or not
	// used is, per page, the last Materialize call (counted in calls)
	// that named it: ReleaseIdle keeps the pages named lately. A map, not
	// a slice a page: a sparse arena of tens of GiB names few pages.
	used  map[int]uint32
	calls uint32
}

func newLazyPages(size int) lazyPages {
	n := (size + pageBytes - 1) / pageBytes
	held := make([]uint64, (n+63)/64)
	for i := range held {
		held[i] = ^uint64(0)
	}
	return lazyPages{held: held}
}

// idle reports whether none of the last age Materialize calls named page
// p (always, for age 0).
func (l *lazyPages) idle(p, age int) bool {
	u, ok := l.used[p]
	return age == 0 || !ok || l.calls-u >= uint32(age)
}

func (l *lazyPages) has(p int) bool { return l.held[p/64]&(1<<(p%64)) != 0 }

func (l *lazyPages) set(p int) { l.setRange(p, p+1) }

func (l *lazyPages) clear(p int) { l.clearRange(p, p+1) }

// setRange marks pages [p0, p1) held, a word of bits at a time.
func (l *lazyPages) setRange(p0, p1 int) {
	eachWord(p0, p1, func(i int, mask uint64) {
		l.holes -= bits.OnesCount64(^l.held[i] & mask)
		l.held[i] |= mask
	})
}

// clearRange marks pages [p0, p1) holes, a word of bits at a time: a
// lazily filled window of a far pool is a million pages, and FillLazy
// clears them all, once per pool a check opens. A page that becomes a
// hole forgets its last use (only held pages are ever marked used).
func (l *lazyPages) clearRange(p0, p1 int) {
	eachWord(p0, p1, func(i int, mask uint64) {
		l.holes += bits.OnesCount64(l.held[i] & mask)
		l.held[i] &^= mask
	})
	if len(l.used) == 0 {
		return
	}
	if p1-p0 <= len(l.used) {
		for p := p0; p < p1; p++ {
			delete(l.used, p)
		}
		return
	}
	for p := range l.used {
		if p0 <= p && p < p1 {
			delete(l.used, p)
		}
	}
}

// eachWord calls f with the index of each word of bits that pages
// [p0, p1) touch and the mask of their bits in it.
func eachWord(p0, p1 int, f func(i int, mask uint64)) {
	for p := p0; p < p1; {
		n := min(64-p%64, p1-p)
		f(p/64, ^uint64(0)>>(64-n)<<(p%64))
		p += n
	}
}

// dense marks every page w touches as held: a dense Fill wrote them.
func (l *lazyPages) dense(w pool.Window) {
	if l.holes == 0 || w.Len == 0 {
		return
	}
	l.setRange(w.Off/pageBytes, (w.End()-1)/pageBytes+1)
}

// run returns the end of the run of pages from page p that are all held
// or all not, no further than page end.
func (l *lazyPages) run(p, end int) (int, bool) {
	held := l.has(p)
	// A word at a time: the first page from p whose bit differs from
	// held's is the lowest set bit of the word (inverted when held)
	// shifted down to p.
	for p++; p < end; p += 64 - p%64 {
		w := l.held[p/64]
		if held {
			w = ^w
		}
		if w >>= p % 64; w != 0 {
			p += bits.TrailingZeros64(w)
			break
		}
	}
	return min(p, end), held
}

// pages calls f over w in stretches of held pages and of holes.
func (s *Memory) pages(w pool.Window, f func(lo, hi int, held bool)) {
	if s.lazy.holes == 0 {
		f(w.Off, w.End(), true)
		return
	}
	for at := w.Off; at < w.End(); {
		end, held := s.lazy.run(at/pageBytes, (w.End()+pageBytes-1)/pageBytes)
		hi := min(end*pageBytes, w.End())
		f(at, hi, held)
		at = hi
	}
}

// Sparse reports whether FillLazy leaves holes: the arena file is on
// tmpfs, where a hole is allocated only by a write. (A disk file system's
// page cache reads holes in around a fault, so residency proves nothing
// there; FillLazy then fills densely.)
func (s *Memory) Sparse() bool { return s.sparse }

// onTmpfs reports whether f lives on tmpfs.
func onTmpfs(f *os.File) bool {
	var st unix.Statfs_t
	return unix.Fstatfs(int(f.Fd()), &st) == nil && st.Type == unix.TMPFS_MAGIC
}

// FillLazy is Fill without writing: w's background becomes its baseline,
// but its whole pages stay holes (they are punched, in case an earlier
// Fill wrote them) until Materialize; the pages at its ends that it only
// partly covers are written now. Off tmpfs it is Fill.
func (s *Memory) FillLazy(w pool.Window, seed uint64) error {
	if !s.sparse {
		return s.Fill(w, seed)
	}
	if err := s.check(w.Off, w.Len); err != nil {
		return err
	}
	if err := s.guard(); err != nil {
		return err
	}
	s.bl.Fill(w, seed)
	lo, hi := (w.Off+pageBytes-1)/pageBytes*pageBytes, w.End()/pageBytes*pageBytes
	if lo >= hi {
		s.writeBase(w)
		return nil
	}
	s.writeBase(pool.Window{Off: w.Off, Len: lo - w.Off})
	s.writeBase(pool.Window{Off: hi, Len: w.End() - hi})
	if err := s.punch(lo, hi); err != nil {
		return err
	}
	s.lazy.clearRange(lo/pageBytes, hi/pageBytes)
	s.lazy.lazy += (hi - lo) / pageBytes
	s.lazyRanges = append(s.lazyRanges, pool.Window{Off: lo, Len: hi - lo})
	return s.note()
}

// note records the file's allocated size after the harness changed it
// (a fill, a materialization, a release). Between notes only someone
// else's writes to holes change it: holesWritten checks that with one
// fstat before any scan asks mincore where.
func (s *Memory) note() error {
	b, err := s.Blocks()
	s.noted = b
	return err
}

// guard is called before the harness allocates or frees pages of the
// file itself: a growth since the last note is someone else's write, and
// the note that follows the harness's own change would hide it, so it is
// kept as dirty until no hole is found resident (settle).
func (s *Memory) guard() error {
	if s.dirty || s.lazy.holes == 0 {
		return nil
	}
	b, err := s.Blocks()
	if b != s.noted {
		s.dirty = true
	}
	return err
}

// settle clears dirty when mincore finds no hole of any lazy window
// resident: every stray page was materialized (Reset) or given back.
func (s *Memory) settle() error {
	if !s.dirty {
		return nil
	}
	for _, r := range s.lazyRanges {
		ext, err := s.allocated(r)
		if err != nil {
			return err
		}
		for _, e := range ext {
			for p := e.Off / pageBytes; p < e.End()/pageBytes; p++ {
				if !s.lazy.has(p) {
					return nil
				}
			}
		}
	}
	s.dirty = false
	return nil
}

// holesWritten reports whether the file grew since the last note, or
// before a note that hid it (guard): some hole was written. Callers allocate the pages they write themselves
// (staging) before the first note, or later writes there count too.
func (s *Memory) holesWritten() (bool, error) {
	if s.lazy.holes == 0 {
		return false, nil
	}
	if s.dirty {
		return true, nil
	}
	b, err := s.Blocks()
	return b != s.noted, err
}

// writeBase writes w's baseline over it.
func (s *Memory) writeBase(w pool.Window) {
	s.eachBase(w, func(lo, hi int, base []byte) { copy(s.mem[lo:hi], base) })
}

// Materialize writes the baseline into every hole the windows of ws
// touch, so that a kernel writing there is seen byte for byte, and notes
// every page they touch as used now (ReleaseIdle).
func (s *Memory) Materialize(ws []pool.Window) error {
	if s.lazy.holes == 0 {
		return nil
	}
	if err := s.materializeHoles(ws, func(lo, hi int) {}); err != nil {
		return err
	}
	s.markUsed(ws)
	return nil
}

// markUsed notes every page the windows of ws touch as used by this
// Materialize call, the age ReleaseIdle reads. Reset's restores are not
// uses: only the pages a case names are.
func (s *Memory) markUsed(ws []pool.Window) {
	if s.lazy.used == nil {
		s.lazy.used = map[int]uint32{}
	}
	s.lazy.calls++
	for _, w := range ws {
		for p := w.Off / pageBytes; p < (w.End()+pageBytes-1)/pageBytes; p++ {
			s.lazy.used[p] = s.lazy.calls
		}
	}
}

// materializeHoles writes the baseline into every hole the windows of ws
// touch and calls held for each stretch [lo, hi) of them the file holds,
// noting the holes afresh when it wrote any.
func (s *Memory) materializeHoles(ws []pool.Window, held func(lo, hi int)) error {
	if err := s.guard(); err != nil {
		return err
	}
	wrote := false
	var err error
	for _, w := range ws {
		if err := s.check(w.Off, w.Len); err != nil {
			return err
		}
		s.pages(w, func(lo, hi int, isHeld bool) {
			switch {
			case err != nil:
			case isHeld:
				held(lo, hi)
			default:
				err = s.materialize(lo/pageBytes, (hi+pageBytes-1)/pageBytes)
				wrote = true
			}
		})
	}
	if wrote {
		return errors.Join(err, s.note())
	}
	return err
}

// materialize writes the baseline over pages [p0, p1) and marks them held.
// The pages are allocated first (allocate): written through the mapping,
// a hole the file system can no longer back (a /dev/shm filled since the
// arena was made) would kill the harness with SIGBUS.
func (s *Memory) materialize(p0, p1 int) error {
	w := pool.Window{Off: p0 * pageBytes, Len: min(p1*pageBytes, len(s.mem)) - p0*pageBytes}
	if err := s.allocate(w); err != nil {
		return err
	}
	var err error
	s.eachBase(w, func(lo, hi int, base []byte) {
		if err == nil {
			err = s.writeFile(base, lo)
		}
	})
	if err != nil {
		return err
	}
	s.lazy.setRange(p0, p1)
	return nil
}

// writeFile writes b at arena offset off through the file rather than the
// mapping: pages written through the mapping fault one at a time, and a
// far pool's live windows, or a dense pool, are thousands of pages.
func (s *Memory) writeFile(b []byte, off int) error {
	for len(b) > 0 {
		n, err := unix.Pwrite(int(s.file.Fd()), b, int64(off))
		if err == nil && n == 0 {
			err = io.ErrShortWrite
		}
		if err != nil {
			return fmt.Errorf("write arena [%d,%d): %w", off, off+len(b), err)
		}
		b, off = b[n:], off+n
	}
	return nil
}

// allocate makes the file back every page of w before the harness writes
// there: a full file system is then an error naming it, not a SIGBUS.
func (s *Memory) allocate(w pool.Window) error {
	lo, hi := w.Off/pageBytes*pageBytes, min((w.End()+pageBytes-1)/pageBytes*pageBytes, len(s.mem))
	err := unix.Fallocate(int(s.file.Fd()), unix.FALLOC_FL_KEEP_SIZE, int64(lo), int64(hi-lo))
	switch {
	case err == nil, errors.Is(err, unix.EOPNOTSUPP), errors.Is(err, unix.ENOSYS):
		return nil
	case errors.Is(err, unix.ENOSPC):
		dir := rundir.RuntimeRoot()
		free, _ := freeSpace(dir)
		return &SpaceError{Need: int64(hi - lo), Free: free, Dir: dir, Grew: true}
	}
	return fmt.Errorf("allocate arena pages [%d,%d): %w", lo, hi, err)
}

// Strays lists the pages of w that are holes as far as the harness knows
// but are allocated in the file: written by someone.
func (s *Memory) Strays(w pool.Window) ([]pool.Window, error) {
	if err := s.check(w.Off, w.Len); err != nil {
		return nil, err
	}
	if written, err := s.holesWritten(); !written || err != nil {
		return nil, err
	}
	ext, err := s.allocated(w)
	if err != nil {
		return nil, err
	}
	var out []pool.Window
	for _, e := range ext {
		for p := e.Off / pageBytes; p < e.End()/pageBytes; p++ {
			if s.lazy.has(p) {
				continue
			}
			if n := len(out); n > 0 && out[n-1].End() == p*pageBytes {
				out[n-1].Len += pageBytes
			} else {
				out = append(out, pool.Window{Off: p * pageBytes, Len: pageBytes})
			}
		}
	}
	return out, nil
}

// allocated lists the whole pages of w (rounded out to pages) the file
// holds, whoever wrote them, as sorted windows: its data extents, from
// lseek's SEEK_DATA and SEEK_HOLE, which cost a call an extent where
// mincore walks every page of w (a pool past 4 GiB is a million pages of
// holes). Where the file system cannot seek so, mincore answers.
func (s *Memory) allocated(w pool.Window) ([]pool.Window, error) {
	lo := w.Off / pageBytes * pageBytes
	hi := min((w.End()+pageBytes-1)/pageBytes*pageBytes, len(s.mem))
	var out []pool.Window
	fd := int(s.file.Fd())
	for at := lo; at < hi; {
		d, err := unix.Seek(fd, int64(at), unix.SEEK_DATA)
		switch {
		case errors.Is(err, unix.ENXIO):
			return out, nil // no data from at on
		case errors.Is(err, unix.EINVAL):
			return s.residentPages(pool.Window{Off: lo, Len: hi - lo})
		case err != nil:
			return nil, fmt.Errorf("seek arena data from %d: %w", at, err)
		}
		if int(d) >= hi {
			return out, nil
		}
		h, err := unix.Seek(fd, d, unix.SEEK_HOLE)
		if err != nil {
			return nil, fmt.Errorf("seek arena hole from %d: %w", d, err)
		}
		a, b := int(d)/pageBytes*pageBytes, min(int(h), hi)
		out = append(out, pool.Window{Off: a, Len: b - a})
		at = b
	}
	return out, nil
}

// residentPages is allocated by mincore over every page of w.
func (s *Memory) residentPages(w pool.Window) ([]pool.Window, error) {
	first := w.Off / pageBytes
	vec := make([]byte, (w.Len+pageBytes-1)/pageBytes)
	if err := mincore(s.mem[w.Off:min(w.Off+len(vec)*pageBytes, len(s.mem))], vec); err != nil {
		return nil, fmt.Errorf("mincore arena [%d,%d): %w", w.Off, w.End(), err)
	}
	var out []pool.Window
	for i, v := range vec {
		if v&1 == 0 {
			continue
		}
		p := (first + i) * pageBytes
		if n := len(out); n > 0 && out[n-1].End() == p {
			out[n-1].Len += pageBytes
		} else {
			out = append(out, pool.Window{Off: p, Len: pageBytes})
		}
	}
	return out, nil
}

// Release makes the whole pages of lazy windows in w holes again. The
// caller has proved them at their baseline (a release is a reset).
func (s *Memory) Release(w pool.Window) error { return s.ReleaseIdle(w, 0) }

// ReleaseIdle is Release for the pages of w that none of the last age
// Materialize calls named (every page, for age 0): pages that case after
// case names (slot 0, the last slot) stay held, compared whole with their
// baseline by every scan as before, instead of being given back and
// written again, a page fault, an allocation and a punch each time.
func (s *Memory) ReleaseIdle(w pool.Window, age int) error {
	if err := s.check(w.Off, w.Len); err != nil {
		return err
	}
	if err := s.guard(); err != nil {
		return err
	}
	// With no hole written, every resident page of the windows is held, and
	// one punch from the first held page to the last frees them all: a
	// punch a page costs a system call a page. A written hole is evidence
	// a wide punch would erase, so then only held runs are punched.
	written, err := s.holesWritten()
	if err != nil {
		return err
	}
	idle := func(p int) bool { return s.lazy.has(p) && s.lazy.idle(p, age) }
	for _, sp := range s.lazyWindows(w) {
		lo, hi := (sp.Off+pageBytes-1)/pageBytes, sp.End()/pageBytes
		if !written {
			if err := s.punchIdle(lo, hi, idle); err != nil {
				return err
			}
			continue
		}
		for p := lo; p < hi; {
			if !idle(p) {
				p++
				continue
			}
			q := p + 1
			for q < hi && idle(q) {
				q++
			}
			if err := s.punch(p*pageBytes, q*pageBytes); err != nil {
				return err
			}
			s.lazy.clearRange(p, q)
			p = q
		}
	}
	if err := s.settle(); err != nil {
		return err
	}
	return s.note()
}

// punchIdle punches the idle pages of [lo, hi), while no hole is
// written: one call from the first idle page to the last, the holes
// between included, unless a page that is held but not idle lies between.
// It marks them holes.
func (s *Memory) punchIdle(lo, hi int, idle func(p int) bool) error {
	first, last := -1, -1
	flush := func() error {
		if first < 0 {
			return nil
		}
		if err := s.punch(first*pageBytes, (last+1)*pageBytes); err != nil {
			return err
		}
		s.lazy.clearRange(first, last+1)
		first, last = -1, -1
		return nil
	}
	for p := lo; p < hi; p++ {
		if end, held := s.lazy.run(p, hi); !held {
			p = end - 1 // holes
			continue
		}
		if !idle(p) {
			if err := flush(); err != nil {
				return err
			}
			continue
		}
		if first < 0 {
			first = p
		}
		last = p
	}
	return flush()
}

// lazyWindows are the parts of w inside the whole pages FillLazy left as
// holes.
func (s *Memory) lazyWindows(w pool.Window) []pool.Window {
	return pool.Intersect(s.lazyRanges, w)
}

// mincore sets vec[i]&1 when page i of b is in memory: for a shared file
// mapping, when the file holds the page, whoever wrote it.
func mincore(b, vec []byte) error {
	_, _, e := unix.Syscall(unix.SYS_MINCORE, uintptr(unsafe.Pointer(unsafe.SliceData(b))), uintptr(len(b)), uintptr(unsafe.Pointer(unsafe.SliceData(vec))))
	if e != 0 {
		return e
	}
	return nil
}

// punch makes arena bytes [lo, hi) (page-aligned) holes.
func (s *Memory) punch(lo, hi int) error {
	err := unix.Fallocate(int(s.file.Fd()), unix.FALLOC_FL_PUNCH_HOLE|unix.FALLOC_FL_KEEP_SIZE, int64(lo), int64(hi-lo))
	if err != nil {
		return fmt.Errorf("punch arena [%d,%d): %w", lo, hi, err)
	}
	return nil
}

// Held is how many bytes of lazily filled windows are materialized: what
// a scan of them reads, and what Release gives back.
func (s *Memory) Held() int { return (s.lazy.lazy - s.lazy.holes) * pageBytes }

// HeldIn is Held within w, of the pages none of the last age Materialize
// calls named (every page, for age 0): what ReleaseIdle(w, age) gives
// back.
func (s *Memory) HeldIn(w pool.Window, age int) int {
	n := 0
	for _, sp := range s.lazyWindows(w) {
		hi := sp.End() / pageBytes
		for p := (sp.Off + pageBytes - 1) / pageBytes; p < hi; {
			end, held := s.lazy.run(p, hi)
			for ; held && p < end; p++ {
				if s.lazy.idle(p, age) {
					n++
				}
			}
			p = end
		}
	}
	return n * pageBytes
}

// Reserve implements arena.Lazy: it allocates w's pages (fallocate, so a
// full file system is an error here, not a SIGBUS at the first write)
// and notes the file's size.
func (s *Memory) Reserve(w pool.Window) error {
	if err := s.check(w.Off, w.Len); err != nil {
		return err
	}
	if err := s.guard(); err != nil {
		return err
	}
	if err := unix.Fallocate(int(s.file.Fd()), 0, int64(w.Off), int64(w.Len)); err != nil &&
		!errors.Is(err, unix.EOPNOTSUPP) && !errors.Is(err, unix.ENOSYS) {
		return fmt.Errorf("reserve arena [%d,%d): %w", w.Off, w.End(), err)
	}
	return s.note()
}

// Blocks is the file's allocated size in 512-byte blocks: it grows when
// anyone writes a hole, so comparing it before and after a run proves, in
// one system call, that no hole was written.
func (s *Memory) Blocks() (int64, error) {
	var st unix.Stat_t
	if err := unix.Fstat(int(s.file.Fd()), &st); err != nil {
		return 0, fmt.Errorf("stat arena: %w", err)
	}
	return st.Blocks, nil
}
