package pdasync

import (
	"fmt"
	"io"

	"github.com/kvharness/kvharness/harness/layout"
	"github.com/kvharness/kvharness/harness/oracle"
	"github.com/kvharness/kvharness/harness/property"
	"github.com/kvharness/kvharness/harness/report"
)

// Schema is how pdasync check runs read: a row per profile, a column per
// property (a wrong declared page size counts against descriptor, a wrong
// digest against bytes), and a failure printed with its violations, each
// saying when in the run it was seen, and the run's trace.
var Schema = report.Profiled(&report.Schema[*Case, *Result]{
	Kernel:    Name,
	Columns:   []oracle.Kind{PageMap, BadDescriptor, Completion, EarlyRead, Reuse, Outside, Stale, Bytes, Liveness, Protocol},
	Counts:    map[oracle.Kind]oracle.Kind{oracle.Geometry: BadDescriptor, Digest: Bytes},
	WriteCase: WriteCase,
	FailureJSON: func(c *Case, r *Result) report.Object {
		return report.Object{{Key: "case", Value: c}, {Key: "violations", Value: r.Violations}, {Key: "trace", Value: r.Trace, OmitEmpty: true}}
	},
	Repro: repro,
}, "asynchronous transfers across two processes", string(Name))

// repro saves a failing row: the case carries its whole geometry and
// schedule; the file's layout is the first buffer's, its slots the tokens
// of one pool.
func repro(h report.Header, v property.Verdict[*Case, *Result]) (*report.Repro, error) {
	return report.GeometryRepro(Name, h, v, v.Outcome.Failure.Case.Geometry)
}

// maxTrace bounds the trace lines printed for one case.
const maxTrace = 40

// WriteCase prints a checked case: the case, its violations with want/got
// bytes, and the run's trace.
func WriteCase(w io.Writer, _ *layout.Layout, c *Case, r *Result) {
	c.Describe(w, "    ")
	report.WriteLocated(w, r.Violations)
	fmt.Fprintf(w, "  the run (%d moves):\n", len(r.Trace))
	report.WriteCapped(w, len(r.Trace), maxTrace, "more", func(i int) { fmt.Fprintf(w, "    %s\n", r.Trace[i]) })
}
