package oracle

import (
	"fmt"
	"slices"
	"sort"
)

// Typed is a kind's own violation: it knows its Kind and its generic form
// (the one repro files hold).
type Typed interface {
	KindOf() Kind
	Generic() Violation
}

// Found is the violations a kind's Result holds, with the answers every
// Result gives about them. A kind embeds it and adds Primary (which needs
// its own Kinds order), so the counting and the conversion to repro form
// are written once.
type Found[V Typed] struct {
	Violations []V `json:"violations"`
}

// Add appends violations.
func (f *Found[V]) Add(vs ...V) { f.Violations = append(f.Violations, vs...) }

// Failed reports whether any invariant was violated.
func (f *Found[V]) Failed() bool { return len(f.Violations) > 0 }

// Has reports whether a violation of kind k was found.
func (f *Found[V]) Has(k Kind) bool {
	return slices.ContainsFunc(f.Violations, func(v V) bool { return v.KindOf() == k })
}

// NumViolations counts the violations.
func (f *Found[V]) NumViolations() int { return len(f.Violations) }

// Generic is the violations in the form every kind's repro files hold.
func (f *Found[V]) Generic() []Violation {
	out := make([]Violation, len(f.Violations))
	for i, v := range f.Violations {
		out[i] = v.Generic()
	}
	return out
}

// KeepPerKind orders vs by kind in kinds' order (stable: the order seen
// within a kind) and keeps the first max of each kind: one wrong buffer
// can fail every page, and a report wants the first few. note adds its
// text to the last violation kept of a kind that lost some, saying how
// many.
func KeepPerKind[V Typed](vs []V, kinds []Kind, max int, note func(v *V, text string)) []V {
	rank := func(k Kind) int { return slices.Index(kinds, k) }
	sort.SliceStable(vs, func(a, b int) bool { return rank(vs[a].KindOf()) < rank(vs[b].KindOf()) })
	var out []V
	for i := 0; i < len(vs); {
		k := vs[i].KindOf()
		n := i
		for n < len(vs) && vs[n].KindOf() == k {
			n++
		}
		keep := vs[i:min(n, i+max)]
		if n-i > max {
			note(&keep[len(keep)-1], fmt.Sprintf(" (and %d more %s violations)", n-i-max, k))
		}
		out = append(out, keep...)
		i = n
	}
	return out
}
