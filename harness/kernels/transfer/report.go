package transfer

import (
	"fmt"
	"io"
	"text/tabwriter"

	"github.com/kvharness/kvharness/harness/layout"
	"github.com/kvharness/kvharness/harness/oracle"
	"github.com/kvharness/kvharness/harness/pd"
	"github.com/kvharness/kvharness/harness/property"
	"github.com/kvharness/kvharness/harness/report"
)

// Schema is how transfer check runs read: a row per profile, a column per
// transfer property (a declared page size that is wrong counts against
// descriptor: it is the item_len every descriptor of that buffer will
// carry), and a failure printed with its violations located by room,
// buffer, page and descriptor, the descriptors and the room digests.
var Schema = report.Profiled(&report.Schema[*Case, *Result]{
	Kernel:    Name,
	Columns:   []oracle.Kind{BadDescriptor, Overlap, Coverage, PageMismatch, Outside, SourceWrite, Checksum, oracle.Determinism},
	Counts:    map[oracle.Kind]oracle.Kind{oracle.Geometry: BadDescriptor},
	WriteCase: WriteCase,
	FailureJSON: func(c *Case, r *Result) report.Object {
		return report.Object{{Key: "case", Value: c}, {Key: "violations", Value: r.Violations},
			{Key: "descriptors", Value: r.Descriptors, OmitEmpty: true}, {Key: "digests", Value: r.Digests, OmitEmpty: true}}
	},
	Repro: repro,
}, "transfers", "transfer")

// repro saves a failing transfer row: the case carries its whole
// geometry; the file's layout is the first buffer's, its slots the tokens
// of one pool, so the common header reads as it does for stores.
func repro(h report.Header, v property.Verdict[*Case, *Result]) (*report.Repro, error) {
	return report.GeometryRepro(Name, h, v, v.Outcome.Failure.Case.Geometry)
}

// maxDescriptors bounds the descriptors printed for one case.
const maxDescriptors = 8

// WriteCase prints a checked transfer case: the case, its violations with
// want/got bytes, the descriptors the plugin answered and each room's
// digests as a decode server would compare them.
func WriteCase(w io.Writer, _ *layout.Layout, c *Case, r *Result) {
	c.Describe(w, "    ")
	report.WriteLocated(w, r.Violations)
	fmt.Fprintf(w, "  %d descriptor%s answered:\n", len(r.Descriptors), report.Plural(len(r.Descriptors)))
	report.WriteCapped(w, len(r.Descriptors), maxDescriptors, "more", func(i int) {
		fmt.Fprintf(w, "    #%-3d %s\n", i, r.Descriptors[i])
	})
	writeDigests(w, r.Digests)
}

// writeDigests prints the room digests: ok, or REJECT where decode's
// digest differs from prefill's.
func writeDigests(w io.Writer, ds []pd.RoomDigest) {
	if len(ds) == 0 {
		return
	}
	fmt.Fprintf(w, "  room digests (SHA-256 of the room's pages in order, prefill vs decode):\n")
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	for _, d := range ds {
		verdict := "ok"
		if !d.Match() {
			verdict = "REJECT"
		}
		fmt.Fprintf(tw, "    room %d (id %d)\t%s\t%d pages\t%s\t%s\t%s\n", d.Room, d.RoomID, d.Buffer, d.Pages, d.Src, d.Dst, verdict)
	}
	tw.Flush()
}
