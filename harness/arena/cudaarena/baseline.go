package cudaarena

import "github.com/kvharness/kvharness/harness/pool"

// span is part of a window that Fill gave the background of seed. The
// background is relative to the filled window (its byte k is byte k of
// pool.Background(seed, 0, ...)), so a span remembers origin, the offset of
// the Fill window it came from, even after a later Fill cut it down.
type span struct {
	pool.Window
	seed   uint64
	origin int
}

// baseline records which Fill each arena byte last got; bytes never filled
// have a zero baseline, as in a fresh pool.SHM. spans are disjoint,
// non-empty and sorted by offset; a harness fills a handful of windows, so
// linear scans are fine.
type baseline struct {
	spans []span
}

// fill makes w's baseline the background of seed, cutting w out of older
// spans it overlaps.
func (b *baseline) fill(w pool.Window, seed uint64) {
	if w.Len <= 0 {
		return
	}
	var out []span
	add := func(s span) {
		if s.Len > 0 {
			out = append(out, s)
		}
	}
	placed := false
	for _, s := range b.spans {
		if s.End() <= w.Off {
			add(s)
			continue
		}
		add(span{pool.Window{Off: s.Off, Len: min(s.End(), w.Off) - s.Off}, s.seed, s.origin})
		if !placed {
			add(span{w, seed, w.Off})
			placed = true
		}
		add(span{pool.Window{Off: max(s.Off, w.End()), Len: s.End() - max(s.Off, w.End())}, s.seed, s.origin})
	}
	if !placed {
		add(span{w, seed, w.Off})
	}
	b.spans = merge(out)
}

// merge joins touching spans of one seed and origin (the pieces of a Fill
// that a later Fill split and a third one healed): their background is one
// run, so one kernel launch covers them.
func merge(spans []span) []span {
	var out []span
	for _, s := range spans {
		if n := len(out); n > 0 && out[n-1].End() == s.Off && out[n-1].seed == s.seed && out[n-1].origin == s.origin {
			out[n-1].Len += s.Len
			continue
		}
		out = append(out, s)
	}
	return out
}

// piece is a stretch of a window with one baseline: when filled, the
// background of seed for the window filled from origin; zeros otherwise.
type piece struct {
	pool.Window
	seed   uint64
	origin int
	filled bool
}

// pieces splits w into stretches of one baseline each, in order, covering w.
func (b *baseline) pieces(w pool.Window) []piece {
	var out []piece
	at := w.Off
	for _, s := range b.spans {
		if s.End() <= at {
			continue
		}
		if s.Off >= w.End() {
			break
		}
		if s.Off > at {
			out = append(out, piece{Window: pool.Window{Off: at, Len: s.Off - at}})
			at = s.Off
		}
		end := min(s.End(), w.End())
		out = append(out, piece{pool.Window{Off: at, Len: end - at}, s.seed, s.origin, true})
		at = end
	}
	if at < w.End() {
		out = append(out, piece{Window: pool.Window{Off: at, Len: w.End() - at}})
	}
	return out
}

// expected writes the baseline of arena bytes [off, off+len(dst)).
func (b *baseline) expected(dst []byte, off int) {
	for _, p := range b.pieces(pool.Window{Off: off, Len: len(dst)}) {
		part := dst[p.Off-off : p.End()-off]
		if p.filled {
			pool.FillBackground(part, p.seed, p.Off-p.origin)
		} else {
			clear(part)
		}
	}
}
