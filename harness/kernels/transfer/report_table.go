package transfer

import (
	"fmt"
	"io"
	"text/tabwriter"

	"github.com/kvharness/kvharness/harness/oracle"
	"github.com/kvharness/kvharness/harness/property"
	"github.com/kvharness/kvharness/harness/workload"
)

// TransferProperties are a transfer table's columns, in order. Geometry
// (a declared page size that is wrong) counts against descriptor: it is
// the item_len every descriptor of that buffer will carry.
var TransferProperties = []oracle.Kind{oracle.BadDescriptor, oracle.Overlap, oracle.Coverage, oracle.PageMismatch,
	oracle.Outside, oracle.SourceWrite, oracle.Checksum, oracle.Determinism}

// TransferPropertyOf maps a violation kind to its transfer column.
func TransferPropertyOf(k oracle.Kind) oracle.Kind {
	if k == oracle.Geometry {
		return oracle.BadDescriptor
	}
	return k
}

// TransferHeader describes a transfer suite run above its table.
type TransferHeader struct {
	Plugin, Version, Variant string
	Cases                    int
	Seed                     int64
	Backend                  string // "cpu" or "cuda:<device>"
	Geometry                 workload.TransferGeometry
}

// WriteTransferTable prints one row per profile and one column per
// transfer property: ok, FAIL, FLAKY, or FAULT when the plugin broke.
func WriteTransferTable(w io.Writer, h TransferHeader, vs []property.Verdict) {
	variant, backend := h.Variant, h.Backend
	if variant == "" {
		variant = "none"
	}
	if backend == "" {
		backend = "cpu"
	}
	fmt.Fprintf(w, "plugin %s %s, variant %s, on %s: transfers, up to %d cases per row, seed %d, %v\n\n",
		h.Plugin, h.Version, variant, backend, h.Cases, h.Seed, h.Geometry)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprint(tw, "profile\tcases")
	for _, p := range TransferProperties {
		fmt.Fprintf(tw, "\t%s", p)
	}
	fmt.Fprintln(tw, "\tfaults")
	for _, v := range vs {
		fmt.Fprintf(tw, "%s\t%d", v.Label, v.Outcome.Cases)
		for _, p := range TransferProperties {
			fmt.Fprintf(tw, "\t%s", transferCell(v.Outcome, p))
		}
		fmt.Fprintf(tw, "\t%d\n", len(v.Outcome.Faults))
	}
	tw.Flush()
}

func transferCell(o *property.Outcome, p oracle.Kind) string {
	if o.Fault != nil {
		return "FAULT"
	}
	if o.Failure == nil {
		return "ok"
	}
	for _, v := range o.Failure.Original.Violations {
		if TransferPropertyOf(v.Kind) == p {
			if o.Failure.Flaky {
				return "FLAKY"
			}
			return "FAIL"
		}
	}
	return "ok"
}
