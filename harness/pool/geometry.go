package pool

import (
	"errors"
	"fmt"

	"github.com/kvharness/kvharness/harness/layout"
)

// Window is a byte range [Off, Off+Len) of the arena.
type Window struct{ Off, Len int }

// End is the first byte after the window.
func (w Window) End() int { return w.Off + w.Len }

// Total is how many bytes the windows ws cover, counted with overlaps.
func Total(ws []Window) int {
	n := 0
	for _, w := range ws {
		n += w.Len
	}
	return n
}

// Extend adds the n bytes at off to ws, extending its last window when
// that ends at off: windows added in order of offset stay maximal runs.
func Extend(ws []Window, off, n int) []Window {
	if k := len(ws); k > 0 && ws[k-1].End() == off {
		ws[k-1].Len += n
		return ws
	}
	return append(ws, Window{Off: off, Len: n})
}

// AppendJoined appends to out the sorted, disjoint windows ws with those
// at most gap bytes apart joined into one: a scan of a span costs less
// than of its many small windows. out may be ws[:0] (joined in place).
func AppendJoined(out, ws []Window, gap int) []Window {
	for _, w := range ws {
		if k := len(out); k > 0 && w.Off-out[k-1].End() <= gap {
			out[k-1].Len = w.End() - out[k-1].Off
			continue
		}
		out = append(out, w)
	}
	return out
}

// Intersect is the parts of w inside the windows ws, in ws's order: what
// of a window a sparse arena has memory behind.
func Intersect(ws []Window, w Window) []Window {
	var out []Window
	for _, b := range ws {
		if lo, hi := max(b.Off, w.Off), min(b.End(), w.End()); lo < hi {
			out = append(out, Window{Off: lo, Len: hi - lo})
		}
	}
	return out
}

// Contains reports whether off lies in the window.
func (w Window) Contains(off int) bool { return off >= w.Off && off < w.End() }

// Spec asks for one pool in an arena.
type Spec struct {
	Name   string
	Layout *layout.Layout
	Slots  int
	// Buffer, when set, places the pool in a multi-buffer cache on one
	// side of a transfer: what the transfer kinds tell a plugin of it.
	Buffer *Buffer
}

// Buffer is one side's pool of a buffer of a multi-buffer KV cache (see
// pd.Buffer): the side ("src", the prefill's, or "dst", the decode's),
// the layer and buffer, the allocation it is carved from ("" when it owns
// one) and its page table (a room's page p lives in physical page
// (p + Shift) mod pages).
type Buffer struct {
	Side  string
	Layer int
	Name  string
	Alloc string
	Shift int
}

// Region is a planned pool: where its guards and pages are, in the arena
// region Mem (0, the first, unless a kind spreads its pools over several
// memory spaces).
type Region struct {
	Spec
	GuardBefore, Pool, GuardAfter Window
	Mem                           int
}

// Background returns the background of n bytes at off, counted from the
// pool base (negative in the leading guard): regions are filled from the
// start of their leading guard.
func (r Region) Background(seed uint64, off, n int) []byte {
	return Background(seed, off+r.GuardBefore.Len, n)
}

// Span returns the whole region, guards included.
func (r Region) Span() Window {
	return Window{r.GuardBefore.Off, r.GuardAfter.End() - r.GuardBefore.Off}
}

// Geometry is a planned arena: regions back to back, then staging.
type Geometry struct {
	Regions []Region
	Staging Window
	Size    int
}

// Alignment of every window: enough for 16-byte vector accesses and for
// CUDA's 256-byte allocation granularity.
const Alignment = 256

// MaxArenaBytes bounds an arena so a bad --slots flag is a clear error, not
// an out-of-memory kill.
const MaxArenaBytes = 64 << 30

func align(n int) int { return (n + Alignment - 1) / Alignment * Alignment }

// ErrTooLarge is wrapped by Plan's error for pools an arena cannot hold:
// the flags' error, the same for every plugin and kernel.
var ErrTooLarge = errors.New("arena too large")

// Plan lays out pools and a staging region of stagingBytes. Each guard is
// at least one page of its pool and at least 4 KiB, so a slot -1 or a slot
// one past the end lands inside a guard rather than in a neighbour.
func Plan(specs []Spec, stagingBytes int) (Geometry, error) {
	var g Geometry
	off := 0
	for _, s := range specs {
		if s.Slots < 1 {
			return Geometry{}, fmt.Errorf("pool %q: %d slots; want at least 1", s.Name, s.Slots)
		}
		if s.Slots/s.Layout.PageSize > MaxArenaBytes/s.Layout.PageBytes() {
			return Geometry{}, fmt.Errorf("%w: pool %q: %d slots of %s need more than %d GiB; use fewer slots",
				ErrTooLarge, s.Name, s.Slots, s.Layout.Name, MaxArenaBytes>>30)
		}
		guard := align(max(s.Layout.PageBytes(), 4096))
		r := Region{Spec: s}
		r.GuardBefore = Window{off, guard}
		r.Pool = Window{r.GuardBefore.End(), align(s.Layout.PoolBytes(s.Slots))}
		r.GuardAfter = Window{r.Pool.End(), guard}
		off = r.GuardAfter.End()
		if off > MaxArenaBytes {
			return Geometry{}, fmt.Errorf("%w: pool %q: %d slots of %s need more than %d GiB; use fewer slots",
				ErrTooLarge, s.Name, s.Slots, s.Layout.Name, MaxArenaBytes>>30)
		}
		g.Regions = append(g.Regions, r)
	}
	g.Staging = Window{off, align(max(stagingBytes, Alignment))}
	g.Size = g.Staging.End()
	return g, nil
}
