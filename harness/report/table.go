package report

import (
	"fmt"
	"io"
	"text/tabwriter"

	"github.com/kvharness/kvharness/harness/oracle"
	"github.com/kvharness/kvharness/harness/property"
)

// Properties are the table's columns, in order. Each violation kind counts
// against one property: missing against value, geometry against stride.
var Properties = []oracle.Kind{oracle.Padding, oracle.Guard, oracle.Stride, oracle.Alias, oracle.Value, oracle.Determinism, oracle.Differential}

// PropertyOf maps a violation kind to its property column.
func PropertyOf(k oracle.Kind) oracle.Kind {
	switch k {
	case oracle.Missing:
		return oracle.Value
	case oracle.Geometry:
		return oracle.Stride
	}
	return k
}

// Header describes a suite run above its table.
type Header struct {
	Plugin, Version, Variant  string
	Cases, Slots, MaxCapacity int
	Seed                      int64
	Backend                   string // "cpu" or "cuda:<device>"
	Graph                     bool
}

// WriteTable prints one row per layout × padding and one column per
// property: ok, FAIL, FLAKY, or FAULT when the plugin broke.
func WriteTable(w io.Writer, h Header, vs []property.Verdict) {
	variant := h.Variant
	if variant == "" {
		variant = "none"
	}
	backend := h.Backend
	if backend == "" {
		backend = "cpu"
	}
	if h.Graph {
		backend += ", graph replay"
	}
	fmt.Fprintf(w, "plugin %s %s, variant %s, on %s: up to %d cases per row, seed %d, %d slots, capacity ≤ %d\n\n",
		h.Plugin, h.Version, variant, backend, h.Cases, h.Seed, h.Slots, h.MaxCapacity)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprint(tw, "layout\tpadding\tcases")
	for _, p := range Properties {
		fmt.Fprintf(tw, "\t%s", p)
	}
	fmt.Fprintln(tw, "\tfaults")
	for _, v := range vs {
		fmt.Fprintf(tw, "%s\t%s\t%d", v.Layout.Name, v.Label, v.Outcome.Cases)
		for _, p := range Properties {
			fmt.Fprintf(tw, "\t%s", cell(v.Outcome, p))
		}
		fmt.Fprintf(tw, "\t%d\n", len(v.Outcome.Faults))
	}
	tw.Flush()
}

func cell(o *property.Outcome, p oracle.Kind) string {
	if o.Fault != nil {
		return "FAULT"
	}
	if o.Failure == nil {
		return "ok"
	}
	for _, v := range o.Failure.Original.Violations {
		if PropertyOf(v.Kind) == p {
			if o.Failure.Flaky {
				return "FLAKY"
			}
			return "FAIL"
		}
	}
	return "ok"
}
