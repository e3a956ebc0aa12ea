// Package baseline records what every byte of an arena holds when no
// kernel has touched it: the seeded background of the window a Fill gave
// it, or zero. Both arena backends keep it this way instead of as a copy
// of the arena: the CUDA kernels compute the background on the fly, and
// the shared-memory backend compares pools that share a seed against one
// copy of their background.
package baseline

import (
	"sort"

	"github.com/kvharness/kvharness/harness/pool"
)

// Span is part of a window that Fill gave the background of seed. The
// background is relative to the filled window (its byte k is byte k of
// pool.Background(seed, 0, ...)), so a span remembers origin, the offset of
// the Fill window it came from, even after a later Fill cut it down.
type Span struct {
	pool.Window
	Seed   uint64
	Origin int
}

// Spans records which Fill each arena byte last got; bytes never filled
// have a zero baseline, as in a fresh shared-memory file. List is
// disjoint, non-empty and sorted by offset; a harness fills a few dozen
// windows, and Pieces finds its first by binary search.
type Spans struct {
	List []Span
}

// Fill makes w's baseline the background of seed, cutting w out of older
// spans it overlaps.
func (b *Spans) Fill(w pool.Window, seed uint64) {
	if w.Len <= 0 {
		return
	}
	var out []Span
	add := func(s Span) {
		if s.Len > 0 {
			out = append(out, s)
		}
	}
	placed := false
	for _, s := range b.List {
		if s.End() <= w.Off {
			add(s)
			continue
		}
		add(Span{pool.Window{Off: s.Off, Len: min(s.End(), w.Off) - s.Off}, s.Seed, s.Origin})
		if !placed {
			add(Span{w, seed, w.Off})
			placed = true
		}
		add(Span{pool.Window{Off: max(s.Off, w.End()), Len: s.End() - max(s.Off, w.End())}, s.Seed, s.Origin})
	}
	if !placed {
		add(Span{w, seed, w.Off})
	}
	b.List = merge(out)
}

// merge joins touching spans of one seed and origin (the pieces of a Fill
// that a later Fill split and a third one healed): their background is one
// run, so one kernel launch covers them.
func merge(spans []Span) []Span {
	var out []Span
	for _, s := range spans {
		if n := len(out); n > 0 && out[n-1].End() == s.Off && out[n-1].Seed == s.Seed && out[n-1].Origin == s.Origin {
			out[n-1].Len += s.Len
			continue
		}
		out = append(out, s)
	}
	return out
}

// Piece is a stretch of a window with one baseline: when filled, the
// background of seed for the window filled from origin; zeros otherwise.
type Piece struct {
	pool.Window
	Seed   uint64
	Origin int
	Filled bool
}

// Within returns the span that holds all of w, if one does: the usual
// question, answered without building pieces.
func (b *Spans) Within(w pool.Window) (Span, bool) {
	i := sort.Search(len(b.List), func(i int) bool { return b.List[i].End() > w.Off })
	if i < len(b.List) && b.List[i].Off <= w.Off && w.End() <= b.List[i].End() {
		return b.List[i], true
	}
	return Span{}, false
}

// Pieces splits w into stretches of one baseline each, in order, covering w.
func (b *Spans) Pieces(w pool.Window) []Piece { return b.AppendPieces(nil, w) }

// AppendPieces is Pieces appended to out: a scan of thousands of windows
// cuts them all into one slice.
func (b *Spans) AppendPieces(out []Piece, w pool.Window) []Piece {
	at := w.Off
	first := sort.Search(len(b.List), func(i int) bool { return b.List[i].End() > at })
	for _, s := range b.List[first:] {
		if s.End() <= at {
			continue
		}
		if s.Off >= w.End() {
			break
		}
		if s.Off > at {
			out = append(out, Piece{Window: pool.Window{Off: at, Len: s.Off - at}})
			at = s.Off
		}
		end := min(s.End(), w.End())
		out = append(out, Piece{pool.Window{Off: at, Len: end - at}, s.Seed, s.Origin, true})
		at = end
	}
	if at < w.End() {
		out = append(out, Piece{Window: pool.Window{Off: at, Len: w.End() - at}})
	}
	return out
}

// Expected writes the baseline of arena bytes [off, off+len(dst)).
func (b *Spans) Expected(dst []byte, off int) {
	for _, p := range b.Pieces(pool.Window{Off: off, Len: len(dst)}) {
		part := dst[p.Off-off : p.End()-off]
		if p.Filled {
			pool.FillBackground(part, p.Seed, p.Off-p.Origin)
		} else {
			clear(part)
		}
	}
}
