package layout

import (
	"fmt"
	"slices"
)

// PadPolicy is what a pad field's bytes must hold after a store.
type PadPolicy string

// The pad policies. A pad byte is don't-care unless the layout (or the
// kernel, see [Layout.WithPadPolicy]) says otherwise: DeepSeek-V4's
// kernel never writes the byte after its seven scales, and nothing reads
// it. A pad byte of a padded row's slot is still part of that slot: the
// padding property holds it to its old value whatever the policy.
const (
	PadAny  PadPolicy = "any"  // any value, written or not (the default, also when empty)
	PadZero PadPolicy = "zero" // zero after every store
	// PadKeep is what the byte held before the store: the kernel never
	// writes it. A row's bytes alone cannot show it; see [Layout.Kept]
	// and [Layout.JudgeKept].
	PadKeep PadPolicy = "keep"
)

func (p PadPolicy) check() error {
	switch p {
	case "", PadAny, PadZero, PadKeep:
		return nil
	}
	return fmt.Errorf("pad policy %q: want %q (the default), %q or %q", p, PadAny, PadZero, PadKeep)
}

// Zeroed reports whether the policy requires zero bytes.
func (p PadPolicy) Zeroed() bool { return p == PadZero }

// Kept reports whether the policy requires the bytes the pool held.
func (p PadPolicy) Kept() bool { return p == PadKeep }

// compilePads lists each piece's pad bytes: those a store may leave
// holding anything (policy any, and keep, which the row's bytes cannot
// judge) and those it must leave as they were (keep).
func (l *Layout) compilePads() {
	l.dontCare = make([][]Span, len(l.pieces))
	l.kept = make([][]Span, len(l.pieces))
	for _, f := range l.order {
		if f.Kind != KindPad || f.Policy.Zeroed() {
			continue
		}
		// One span per field and piece, as the planes model listed them.
		firstCare, firstKept := map[int]int{}, map[int]int{}
		for b := f.img; b < f.img+f.size; b++ {
			p := l.pieceAt(b)
			at := b - l.pieces[p].img
			l.dontCare[p] = appendByte(l.dontCare[p], firstCare, p, at)
			if f.Policy.Kept() {
				l.kept[p] = appendByte(l.kept[p], firstKept, p, at)
			}
		}
	}
	for p := range l.pieces {
		slices.SortFunc(l.dontCare[p], func(a, b Span) int { return a.Off - b.Off })
		slices.SortFunc(l.kept[p], func(a, b Span) int { return a.Off - b.Off })
	}
}

// appendByte adds byte at to piece p's spans, extending the last span if
// the same field (whose first span in the piece first records) made it
// and it ends there.
func appendByte(spans []Span, first map[int]int, p, at int) []Span {
	if i, ok := first[p]; ok && i < len(spans) && spans[len(spans)-1].End() == at {
		spans[len(spans)-1].Len++
		return spans
	}
	if _, ok := first[p]; !ok {
		first[p] = len(spans)
	}
	return append(spans, Span{at, 1})
}

// pieceAt is the piece holding byte b of the token image.
func (l *Layout) pieceAt(b int) int {
	p, _ := slices.BinarySearchFunc(l.pieces, b, func(p piece, b int) int {
		switch {
		case b < p.img:
			return 1
		case b >= p.img+p.len:
			return -1
		}
		return 0
	})
	return p
}

// DontCare lists the byte spans of piece i's record (plane i's, for a
// layout of planes) that a row's judgement leaves alone: its pad fields
// under the default policy, and those the kernel keeps (see Kept), in
// record order. A valid row's footprint is judged on every other byte.
func (l *Layout) DontCare(plane int) []Span {
	out := l.dontCare[plane]
	if len(out) == 0 {
		return nil
	}
	return slices.Clone(out)
}

// Kept lists the byte spans of piece i's record that must hold after a
// store what they held before it: pad fields under the keep policy.
func (l *Layout) Kept(plane int) []Span {
	out := l.kept[plane]
	if len(out) == 0 {
		return nil
	}
	return slices.Clone(out)
}

// Cares reports whether byte off of piece i's record carries meaning: it
// is not a pad byte the layout lets hold anything.
func (l *Layout) Cares(plane, off int) bool {
	return !slices.ContainsFunc(l.dontCare[plane], func(s Span) bool { return off >= s.Off && off < s.End() })
}

// PadPolicies lists each pad field's policy, "any" where none is given,
// in layout order: what kvharness plugins prints.
func (l *Layout) PadPolicies() map[string]PadPolicy {
	out := map[string]PadPolicy{}
	for _, f := range l.order {
		if f.Kind == KindPad {
			p := f.Policy
			if p == "" {
				p = PadAny
			}
			out[f.Name] = p
		}
	}
	return out
}

// WithPadPolicy returns the layout with p as the policy of every pad
// field: what a kernel declares it does with the layout's pad bytes
// (zeroes them, keeps them), over the layout's default. An empty p
// returns l itself (the kernel declared nothing: the layout's policies
// hold); a layout without pad fields takes no declaration.
func (l *Layout) WithPadPolicy(p PadPolicy) (*Layout, error) {
	if p == "" {
		return l, nil
	}
	if err := p.check(); err != nil {
		return nil, fmt.Errorf("layout %s: %w", l.Name, err)
	}
	if len(l.PadPolicies()) == 0 {
		return nil, fmt.Errorf("layout %s has no pad fields: a pad policy (%s) means nothing for it; declare none", l.Name, p)
	}
	c := l.clone()
	for i := range c.Fields {
		if c.Fields[i].Kind == KindPad {
			c.Fields[i].Policy = p
		}
	}
	if err := c.compile(); err != nil {
		return nil, err
	}
	return c, nil
}

// JudgeKept compares the kept pad bytes of a slot's pieces after a store
// (got) with what they held before it (before): a finding per kept pad
// field whose bytes changed.
func (l *Layout) JudgeKept(got, before [][]byte) []Finding {
	var out []Finding
	for _, f := range l.order {
		if f.Kind != KindPad || !f.Policy.Kept() {
			continue
		}
		var fd *Finding
		for b := f.img; b < f.img+f.size; b++ {
			p := l.pieceAt(b)
			at := b - l.pieces[p].img
			if got[p][at] == before[p][at] {
				continue
			}
			if fd == nil {
				fd = &Finding{Rule: RulePad, Field: f.Name, Group: -1, Head: -1, Plane: p, Kept: true}
			}
			fd.addByte(p, at, before[p][at])
		}
		if fd != nil {
			out = append(out, *fd)
		}
	}
	return out
}
