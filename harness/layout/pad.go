package layout

import (
	"fmt"
	"slices"
)

// PadPolicy is what a pad field's bytes must hold after a store.
type PadPolicy string

// The pad policies. A pad byte is don't-care unless the layout says
// otherwise: DeepSeek-V4's kernel never writes the byte after its seven
// scales, and nothing reads it. A pad byte of a padded row's slot is
// still part of that slot: the padding property holds it to its old value
// whatever the policy.
const (
	PadAny  PadPolicy = "any"  // any value, written or not (the default, also when empty)
	PadZero PadPolicy = "zero" // zero after every store
)

func (p PadPolicy) check() error {
	switch p {
	case "", PadAny, PadZero:
		return nil
	}
	return fmt.Errorf("pad policy %q: want %q (the default) or %q", p, PadAny, PadZero)
}

// Zeroed reports whether the policy requires zero bytes.
func (p PadPolicy) Zeroed() bool { return p == PadZero }

// DontCare lists the byte spans of plane i's record that a store may leave
// holding anything: its pad fields under the default policy, in record
// order. A valid row's footprint is judged on every other byte.
func (l *Layout) DontCare(plane int) []Span {
	var out []Span
	for _, f := range l.planes[plane].fields {
		if f.Kind == KindPad && !f.Policy.Zeroed() {
			out = append(out, Span{f.offset, f.size})
		}
	}
	return out
}

// Cares reports whether byte off of plane i's record carries meaning: it
// is not a pad byte the layout lets hold anything.
func (l *Layout) Cares(plane, off int) bool {
	return !slices.ContainsFunc(l.DontCare(plane), func(s Span) bool { return off >= s.Off && off < s.End() })
}
