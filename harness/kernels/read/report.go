package read

import (
	"fmt"
	"io"

	"github.com/kvharness/kvharness/harness/layout"
	"github.com/kvharness/kvharness/harness/oracle"
	"github.com/kvharness/kvharness/harness/property"
	"github.com/kvharness/kvharness/harness/report"
)

// Label is the label of every read row: reads have no padding
// conventions, one row per layout.
const Label = "read"

// Schema is how read check runs read: a row per layout, a column per read
// property, and a failure printed with each request's expected and
// returned top k and the pool and staging bytes as want/got.
var Schema = &report.Schema[*Case, *Result]{
	Kernel:     Name,
	Keys:       []report.Key{report.LayoutKey},
	Columns:    Kinds,
	LabelJSON:  "padding",
	JSONLayout: true,
	Title: func(h report.Header) string {
		slots := fmt.Sprintf("%d slots", h.Slots)
		if h.Far {
			slots = "pools past 4 GiB of byte offsets (sparse)"
		}
		return fmt.Sprintf("plugin %s %s, variant %s, read kernel on %s: up to %d cases per layout, seed %d, %s",
			h.Plugin, h.Version, h.VariantOrNone(), h.Backend, h.Cases, h.Seed, slots)
	},
	Headline:  func(l *layout.Layout, _ string) []string { return []string{l.Name, "read"} },
	WriteCase: WriteCase,
	FailureJSON: func(c *Case, r *Result) report.Object {
		return report.Object{{Key: "case", Value: c}, {Key: "violations", Value: r.Violations}}
	},
	Repro: func(h report.Header, v property.Verdict[*Case, *Result]) (*report.Repro, error) {
		return report.FailedRepro(Name, h, v, v.Layout, RowSlots(v.Layout, h.Slots, h.Far), v.Outcome.Failure.Minimal.Violations), nil
	},
}

// WriteCase prints a checked read case and its violations: a verdict on a
// request's answer as its line alone, pool and staging bytes as want/got.
func WriteCase(w io.Writer, l *layout.Layout, c *Case, r *Result) {
	c.Describe(w, "    ")
	if l != nil {
		writeSpecials(w, "    ", c, l.HeadDim)
	}
	shown := make([]report.Shown, len(r.Violations))
	for i, v := range r.Violations {
		if v.Field == "request" { // a result, score or determinism verdict on a request: no bytes
			shown[i] = report.Shown{Line: fmt.Sprintf("%s: %s", v.Kind, v.Detail)}
			continue
		}
		shown[i] = report.Shown{Line: v.String(), Diff: report.HexDiff(v)}
	}
	report.WriteViolations(w, shown)
}

// Result is the verdict on one read case.
type Result struct {
	Violations []oracle.Violation
}

// Failed reports whether any invariant was violated.
func (r *Result) Failed() bool { return len(r.Violations) > 0 }

// Has reports whether a violation of kind k was found.
func (r *Result) Has(k oracle.Kind) bool { return oracle.HasKind(r.Violations, k) }

// Primary is the kind a report leads with: the first in Kinds order.
func (r *Result) Primary() oracle.Kind { return oracle.First(Kinds, r.Has) }

// NumViolations counts the violations.
func (r *Result) NumViolations() int { return len(r.Violations) }
