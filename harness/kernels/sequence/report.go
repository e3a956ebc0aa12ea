package sequence

import (
	"fmt"
	"io"

	"github.com/kvharness/kvharness/harness/layout"
	"github.com/kvharness/kvharness/harness/oracle"
	"github.com/kvharness/kvharness/harness/property"
	"github.com/kvharness/kvharness/harness/report"
)

// Schema is how sequence runs read: a row per profile, a column per
// ownership property, and a failure printed step by step with each
// violation's page, owner, former owner and last legal write.
var Schema = report.Profiled(&report.Schema[*Case, *Result]{
	Kernel:    Name,
	Columns:   []oracle.Kind{Ownership, SharedWrite, Missing, StaleRead, ReadWrong},
	Extra:     []oracle.Kind{Crash},
	WriteCase: WriteCase,
	FailureJSON: func(c *Case, r *Result) report.Object {
		return report.Object{{Key: "case", Value: c}, {Key: "violations", Value: r.Violations},
			{Key: "steps", Value: r.Steps}, {Key: "checked", Value: r.Checked}}
	},
	Repro: repro,
}, "engine lifecycles (sequences of steps)", "sequence")

func repro(h report.Header, v property.Verdict[*Case, *Result]) (*report.Repro, error) {
	return report.LabeledGeometryRepro(Name, h, v, v.Outcome.Failure.Case.Geometry)
}

// WriteCase prints a checked sequence: its steps with their pages, then
// each violation with the page's owner, the row it holds and the step
// that last wrote it legally.
func WriteCase(w io.Writer, _ *layout.Layout, c *Case, r *Result) {
	c.Describe(w, "    ")
	for _, v := range r.Violations {
		fmt.Fprintf(w, "  %v\n", v)
		if len(v.Want) > 0 {
			fmt.Fprintf(w, "    page bytes %d..%d: want % x\n", v.Off, v.Off+len(v.Want)-1, v.Want)
			fmt.Fprintf(w, "    %*s got  % x\n", len(fmt.Sprint(v.Off))*2+14, "", v.Got)
		}
	}
	fmt.Fprintf(w, "  ran %d of %d steps; %d page digests compared, %d pages diffed\n", r.Steps, len(c.Steps), r.Checked, r.Differ)
}
