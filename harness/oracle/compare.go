package oracle

import "bytes"

// Compare describes where two deltas first differ, as a violation whose
// want is the reference run's bytes and got the other run's.
func Compare(kind Kind, a, b Delta, detail string) Violation {
	v := Violation{Kind: kind, Row: NoRow, Detail: detail}
	off, wa, wb := firstDifference(a, b)
	v.Off, v.Len, v.Want, v.Got = off, max(len(wa), len(wb)), wa, wb
	return v
}

// firstDifference returns the first pool offset where the pools the two
// deltas leave differ, and up to MaxShown bytes of each from there (nil
// where that delta left the background). It walks both deltas' windows in
// step, a chunk at a time: deltas of a large batch hold megabytes, and
// indexing every byte in a map cost seconds per case.
func firstDifference(a, b Delta) (int, []byte, []byte) {
	off, ok := firstDiffOffset(newCursor(a), newCursor(b))
	if !ok {
		return -1, nil, nil
	}
	return off, bytesFrom(a, off), bytesFrom(b, off)
}

// firstDiffOffset is the first offset where the deltas differ; false when
// they are equal. Offsets may be negative (the guard before a pool).
func firstDiffOffset(ca, cb *cursor) (int, bool) {
	for {
		switch {
		case ca.done() && cb.done():
			return 0, false
		case ca.done():
			return cb.off(), true
		case cb.done():
			return ca.off(), true
		case ca.off() != cb.off():
			return min(ca.off(), cb.off()), true
		}
		x, y := ca.run(), cb.run()
		n := min(len(x), len(y))
		if !bytes.Equal(x[:n], y[:n]) {
			for i := range n {
				if x[i] != y[i] {
					return ca.off() + i, true
				}
			}
		}
		ca.skip(n)
		cb.skip(n)
	}
}

// cursor walks a delta's bytes in offset order. Windows are sorted and do
// not overlap, as Changed makes them.
type cursor struct {
	d    Delta
	w, k int // window, byte within it
	i    int // index into d.Bytes
}

func newCursor(d Delta) *cursor {
	c := &cursor{d: d}
	c.settle()
	return c
}

func (c *cursor) done() bool { return c.w >= len(c.d.Windows) }
func (c *cursor) off() int   { return c.d.Windows[c.w].Off + c.k }

// run is the rest of the current window's bytes.
func (c *cursor) run() []byte { return c.d.Bytes[c.i : c.i+c.d.Windows[c.w].Len-c.k] }

func (c *cursor) skip(n int) {
	c.k += n
	c.i += n
	c.settle()
}

// settle moves past finished and empty windows.
func (c *cursor) settle() {
	for !c.done() && c.k >= c.d.Windows[c.w].Len {
		c.w, c.k = c.w+1, 0
	}
}

// bytesFrom is up to MaxShown bytes the delta holds from off on, stopping
// at the first offset it does not hold; nil if it holds none at off.
func bytesFrom(d Delta, off int) []byte {
	var out []byte
	c := newCursor(d)
	for !c.done() && len(out) < MaxShown {
		w := c.d.Windows[c.w]
		switch {
		case w.End() <= off:
			c.skip(w.Len - c.k)
			continue
		case c.off() < off:
			c.skip(off - c.off())
			continue
		case c.off() != off+len(out):
			return out
		}
		r := c.run()
		r = r[:min(len(r), MaxShown-len(out))]
		out = append(out, r...)
		c.skip(len(r))
	}
	return out
}
