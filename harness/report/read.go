package report

import (
	"fmt"
	"io"
	"text/tabwriter"

	"github.com/kvharness/kvharness/harness/check"
	"github.com/kvharness/kvharness/harness/oracle"
	"github.com/kvharness/kvharness/harness/property"
)

// ReadProperties are the read table's columns, in order: the plugin's
// declared geometry, then the read kinds, then determinism.
var ReadProperties = []oracle.Kind{oracle.Geometry, oracle.ReadOnly, oracle.Scratch, oracle.Score, oracle.Result, oracle.Determinism}

// WriteReadTable prints one row per layout and one column per read
// property: ok, FAIL, FLAKY, or FAULT when the plugin broke.
func WriteReadTable(w io.Writer, h Header, vs []property.Verdict) {
	variant, backend := h.Variant, h.Backend
	if variant == "" {
		variant = "none"
	}
	if backend == "" {
		backend = "cpu"
	}
	fmt.Fprintf(w, "plugin %s %s, variant %s, read kernel on %s: up to %d cases per layout, seed %d, %d slots\n\n",
		h.Plugin, h.Version, variant, backend, h.Cases, h.Seed, h.Slots)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprint(tw, "layout\tcases")
	for _, p := range ReadProperties {
		fmt.Fprintf(tw, "\t%s", p)
	}
	fmt.Fprintln(tw, "\tfaults")
	for _, v := range vs {
		fmt.Fprintf(tw, "%s\t%d", v.Layout.Name, v.Outcome.Cases)
		for _, p := range ReadProperties {
			fmt.Fprintf(tw, "\t%s", readCell(v.Outcome, p))
		}
		fmt.Fprintf(tw, "\t%d\n", len(v.Outcome.Faults))
	}
	tw.Flush()
}

// readCell is a property's verdict in a read row: every kind is its own
// column.
func readCell(o *property.Outcome, p oracle.Kind) string {
	if o.Fault != nil {
		return "FAULT"
	}
	if o.Failure == nil || !o.Failure.Original.Has(p) {
		return "ok"
	}
	if o.Failure.Flaky {
		return "FLAKY"
	}
	return "FAIL"
}

// WriteReadFailure prints a read failure: the minimal case, then each
// violation, results as the request's expected and returned top k, pool
// and staging bytes as want/got.
func WriteReadFailure(w io.Writer, f Failure) {
	o := f.Verdict.Outcome
	fl := o.Failure
	status := "FAIL"
	if fl.Flaky {
		status = "FLAKY"
	}
	fmt.Fprintf(w, "%s %s%s · %s · read · property %s\n", status, f.Plugin, variantSuffix(f.Variant), f.Layout.Name, fl.Property)
	switch {
	case fl.Flaky:
		fmt.Fprintf(w, "  case %d of seed %d failed once, then passed when re-run; not shrunk\n", o.Cases, f.Verdict.Seed)
	case f.Replayed:
		fmt.Fprintf(w, "  replayed case, confirmed by a re-run:\n")
	default:
		fmt.Fprintf(w, "  found at case %d of seed %d, confirmed by a re-run, shrunk in %d steps to:\n", o.Cases, f.Verdict.Seed, fl.Shrinks)
	}
	WriteReadResult(w, fl.Minimal)
	if f.ReproPath != "" {
		fmt.Fprintf(w, "  replay: kvharness repro %s\n", f.ReproPath)
	}
	if f.Test != "" {
		fmt.Fprintf(w, "  test:   %s\n", f.Test)
	}
}

// WriteReadResult prints a checked read case and its violations.
func WriteReadResult(w io.Writer, r *check.Result) {
	r.Case.Describe(w, "    ")
	fmt.Fprintf(w, "  %d violation%s:\n", len(r.Violations), plural(len(r.Violations)))
	for i, v := range r.Violations {
		if i == MaxViolations {
			fmt.Fprintf(w, "    … %d more\n", len(r.Violations)-i)
			break
		}
		if v.Field == "request" { // a result, score or determinism verdict on a request: no bytes
			fmt.Fprintf(w, "    %s: %s\n", v.Kind, v.Detail)
			continue
		}
		fmt.Fprintf(w, "    %s\n", v)
		for _, line := range hexDiff(v) {
			fmt.Fprintf(w, "      %s\n", line)
		}
	}
}
