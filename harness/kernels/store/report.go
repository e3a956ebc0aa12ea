package store

import (
	"fmt"
	"io"
	"strings"

	"github.com/kvharness/kvharness/harness/layout"
	"github.com/kvharness/kvharness/harness/oracle"
	"github.com/kvharness/kvharness/harness/property"
	"github.com/kvharness/kvharness/harness/protocol"
	"github.com/kvharness/kvharness/harness/report"
)

// Schema is how store check runs read: a row per layout × padding, a
// column per property (missing counts against value, geometry against
// stride), and a failure printed with its rows, its violations and a page
// map.
var Schema = &report.Schema[*Case, *Result]{
	Kernel:     protocol.Store,
	Keys:       []report.Key{report.LayoutKey, report.LabelKey},
	Columns:    []oracle.Kind{oracle.Padding, oracle.Guard, oracle.Stride, oracle.Alias, oracle.Value, oracle.Determinism, oracle.Differential},
	Counts:     map[oracle.Kind]oracle.Kind{oracle.Missing: oracle.Value, oracle.Geometry: oracle.Stride},
	LabelJSON:  "padding",
	JSONLayout: true,
	Title:      title,
	Headline: func(l *layout.Layout, label string) []string {
		return []string{l.Name, "padding " + label}
	},
	WriteCase: WriteCase,
	FailureJSON: func(c *Case, r *Result) report.Object {
		return report.Object{{Key: "case", Value: c}, {Key: "violations", Value: r.Violations}}
	},
	Repro: repro,
}

func title(h report.Header) string {
	variant := h.Variant
	if variant == "" {
		variant = "none"
	}
	backend := h.Backend
	if h.Graph {
		backend += ", graph replay"
	}
	return fmt.Sprintf("plugin %s %s, variant %s, on %s: up to %d cases per row, seed %d, %d slots, capacity ≤ %d",
		h.Plugin, h.Version, variant, backend, h.Cases, h.Seed, h.Slots, h.MaxCapacity)
}

// WriteCase prints a checked case: its rows, its violations with want/got
// bytes, and a page map.
func WriteCase(w io.Writer, l *layout.Layout, c *Case, r *Result) {
	c.Describe(w, "    ")
	report.WriteViolations(w, shown(r.Violations))
	if l != nil {
		writePageMap(w, l, c, r.Violations)
	}
}

// shown prints each violation with its bytes; runs that compare two runs
// show only their first lines: the kind says the rest.
func shown(vs []oracle.Violation) []report.Shown {
	out := make([]report.Shown, len(vs))
	for i, v := range vs {
		lines := report.HexDiff(v)
		if v.Kind == oracle.Determinism || v.Kind == oracle.Differential {
			lines = lines[:min(len(lines), 3)]
		}
		if v.Values != nil {
			lines = append(lines, valueLines(v.Values)...)
		}
		out[i] = report.Shown{Line: v.String(), Diff: lines}
	}
	return out
}

// valueLines print a violation's decoded elements under its bytes:
//
//   - want = e4m3 × 0.002232: 0.1116 -0.8036 …
//   - got  = e4m3 × 0: 0 0 …
func valueLines(x *oracle.Values) []string {
	side := func(i int, vals []string) string {
		scale := ""
		if len(x.Scale) == 2 {
			scale = " × " + x.Scale[i]
		}
		return fmt.Sprintf("%s = %s%s: %s", []string{"- want", "+ got "}[i], x.Format, scale, strings.Join(vals, " "))
	}
	return []string{side(0, x.Want), side(1, x.Got)}
}

// repro is the repro file of a failing row: the layout and pool it ran
// on, the minimal case, and how it was found.
func repro(h report.Header, v property.Verdict[*Case, *Result]) (*report.Repro, error) {
	fl := v.Outcome.Failure
	vs := fl.Minimal.Violations
	if len(vs) > report.MaxViolations {
		vs = vs[:report.MaxViolations]
	}
	return &report.Repro{Version: report.ReproVersion, Kernel: protocol.Store, Plugin: h.PluginArg, Variant: h.Variant,
		Layout: v.Layout.JSON(), Slots: h.Slots, BackgroundSeed: h.Seed, Case: fl.Case, Tag: v.Label,
		Found: &report.Found{Property: fl.Property, Flaky: fl.Flaky, Seed: v.Seed, CaseIndex: v.Outcome.Cases,
			Shrinks: fl.Shrinks, Violations: vs}}, nil
}
