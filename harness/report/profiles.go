package report

import (
	"fmt"
	"io"

	"github.com/kvharness/kvharness/harness/layout"
	"github.com/kvharness/kvharness/harness/oracle"
	"github.com/kvharness/kvharness/harness/workload"
)

// Profiled is s as every kind whose rows are case profiles reads (loads,
// transfers, pdasync): keyed by the profile alone ("profile" in JSON),
// titled by what names the checks and headlined by kind. s brings the
// kind's columns, cases and repro.
func Profiled[C workload.Case, R Result](s *Schema[C, R], what, kind string) *Schema[C, R] {
	s.Keys = []Key{LabelKey}
	s.LabelJSON = "profile"
	s.Title = ProfileTitle(what)
	s.Headline = ProfileHeadline(kind)
	return s
}

// ProfileTitle is the Title of a kind whose rows are case profiles over a
// geometry it brings (transfers, loads): what names the checks, and the
// header's About says the geometry.
func ProfileTitle(what string) func(Header) string {
	return func(h Header) string {
		return fmt.Sprintf("plugin %s %s, variant %s, on %s: %s, up to %d cases per row, seed %d, %s",
			h.Plugin, h.Version, h.VariantOrNone(), h.Backend, what, h.Cases, h.Seed, h.About)
	}
}

// ProfileHeadline is the Headline of a profile kind: a failing row is
// named by the kind and its profile, since its layout is only the first
// buffer's.
func ProfileHeadline(kind string) func(*layout.Layout, string) []string {
	return func(_ *layout.Layout, label string) []string { return []string{kind, "profile " + label} }
}

// A Located is a kind's violation as a failure shows it: a line, and the
// generic form, whose bytes show as a hex diff when it locates some
// (Len > 0; a descriptor's or a digest's verdict has none).
type Located interface {
	String() string
	Generic() oracle.Violation
}

// WriteLocated is WriteViolations of a kind's own violations.
func WriteLocated[V Located](w io.Writer, vs []V) {
	shown := make([]Shown, len(vs))
	for i, v := range vs {
		shown[i] = Shown{Line: v.String()}
		if g := v.Generic(); g.Len > 0 {
			shown[i].Diff = HexDiff(g)
		}
	}
	WriteViolations(w, shown)
}
