package cudapool

import "github.com/kvharness/kvharness/harness/pool"

// span is a window last filled with seed.
type span struct {
	pool.Window
	seed uint64
}

// baseline records which seed each arena byte was last filled with; bytes
// never filled have a zero baseline, as in a fresh pool.SHM. spans are
// disjoint, non-empty and sorted by offset; a harness fills a handful of
// windows, so linear scans are fine.
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
		add(span{pool.Window{Off: s.Off, Len: min(s.End(), w.Off) - s.Off}, s.seed})
		if !placed {
			add(span{w, seed})
			placed = true
		}
		add(span{pool.Window{Off: max(s.Off, w.End()), Len: s.End() - max(s.Off, w.End())}, s.seed})
	}
	if !placed {
		add(span{w, seed})
	}
	b.spans = merge(out)
}

// merge joins touching spans of one seed: their background is one run, so
// one kernel launch covers them.
func merge(spans []span) []span {
	var out []span
	for _, s := range spans {
		if n := len(out); n > 0 && out[n-1].End() == s.Off && out[n-1].seed == s.seed {
			out[n-1].Len += s.Len
			continue
		}
		out = append(out, s)
	}
	return out
}

// piece is a stretch of a window with one baseline: the background of seed
// when filled, zeros otherwise.
type piece struct {
	pool.Window
	seed   uint64
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
		out = append(out, piece{pool.Window{Off: at, Len: end - at}, s.seed, true})
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
			pool.FillBackground(part, p.seed, p.Off)
		} else {
			clear(part)
		}
	}
}
