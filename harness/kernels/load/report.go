package load

import (
	"fmt"
	"io"

	"github.com/kvharness/kvharness/harness/layout"
	"github.com/kvharness/kvharness/harness/oracle"
	"github.com/kvharness/kvharness/harness/property"
	"github.com/kvharness/kvharness/harness/report"
)

// Schema is how load check runs read: a row per profile, a column per
// ordering property (a deadlock counts against the content a load must
// leave, a spurious failure against the failure handling), and a failure
// printed with its schedule, its violations located by layer, buffer and
// page with the missing edge, the gates' answers and the log's size.
var Schema = report.Profiled(&report.Schema[*Case, *Result]{
	Kernel:    Name,
	Columns:   []oracle.Kind{ReadEarly, Overwrite, FailedDone, Content, Race},
	Counts:    map[oracle.Kind]oracle.Kind{Deadlock: Content, Spurious: FailedDone},
	WriteCase: WriteCase,
	FailureJSON: func(c *Case, r *Result) report.Object {
		return report.Object{{Key: "case", Value: c}, {Key: "violations", Value: r.Violations},
			{Key: "gates", Value: r.Gates, OmitEmpty: true}, {Key: "ops", Value: r.Ops}, {Key: "held", Value: r.Held}}
	},
	Repro: repro,
}, "layer loads", "load")

// repro saves a failing row: the case carries its geometry; the file's
// layout is the first buffer's, its slots one pool's tokens.
func repro(h report.Header, v property.Verdict[*Case, *Result]) (*report.Repro, error) {
	return report.LabeledGeometryRepro(Name, h, v, v.Outcome.Failure.Case.Geometry)
}

// WriteCase prints a checked case: its schedule, its violations (want/got
// bytes where a page was wrong), the gates that failed, and how much of
// the log the latch held.
func WriteCase(w io.Writer, _ *layout.Layout, c *Case, r *Result) {
	c.Describe(w, "    ")
	report.WriteLocated(w, r.Violations)
	for _, g := range r.Gates {
		if g.Error != "" {
			fmt.Fprintf(w, "  gate L%d/%s failed: %s\n", g.Layer, g.Buffer, g.Error)
		}
	}
	fmt.Fprintf(w, "  log: %d stream operations, %d of them run after the latch opened\n", r.Ops, r.Held)
}
