package store

import (
	"fmt"
	"io"
	"strings"

	"github.com/kvharness/kvharness/harness/layout"
	"github.com/kvharness/kvharness/harness/oracle"
	"github.com/kvharness/kvharness/harness/plugin"
	"github.com/kvharness/kvharness/harness/property"
	"github.com/kvharness/kvharness/harness/report"
)

// Schema is how store check runs read: a row per layout × padding, a
// column per property (missing counts against value, geometry against
// stride), and a failure printed with its rows, its violations and a page
// map.
var Schema = &report.Schema[*Case, *Result]{
	Kernel:  Name,
	Keys:    []report.Key{report.LayoutKey, report.LabelKey},
	Columns: []oracle.Kind{oracle.Padding, oracle.Guard, oracle.Stride, oracle.Alias, oracle.Value, oracle.Determinism, oracle.Differential},
	Extra:   []oracle.Kind{oracle.Crash, oracle.Sanitizer},
	// Staging counts against guard: both are writes outside the pool.
	Counts:     map[oracle.Kind]oracle.Kind{oracle.Missing: oracle.Value, oracle.Geometry: oracle.Stride, oracle.Staging: oracle.Guard},
	LabelJSON:  "padding",
	JSONLayout: true,
	Title:      title,
	Headline: func(l *layout.Layout, label string) []string {
		return []string{l.Name, "padding " + label}
	},
	WriteCase: WriteCase,
	FailureJSON: func(c *Case, r *Result) report.Object {
		return report.Object{{Key: "case", Value: c}, {Key: "violations", Value: r.Violations},
			{Key: "crash", Value: crashJSON(r.Crash), OmitEmpty: true}, {Key: "sanitizer", Value: r.Findings, OmitEmpty: true}}
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
	slots := fmt.Sprintf("%d slots", h.Slots)
	switch {
	case h.Scaled:
		slots = fmt.Sprintf("%d slots (fewer where a pool would pass %d MiB)", h.Slots, deviceBytes>>20)
	case h.Far:
		slots = "pools past 4 GiB of byte offsets (sparse)"
	}
	t := fmt.Sprintf("plugin %s %s, variant %s, on %s: up to %d cases per row, seed %d, %s, capacity ≤ %d",
		h.Plugin, h.Version, variant, backend, h.Cases, h.Seed, slots, h.MaxCapacity)
	if h.About != "" {
		t += ", " + h.About
	}
	return t
}

// WriteCase prints a checked case: its rows, its violations with want/got
// bytes, and a page map.
func WriteCase(w io.Writer, l *layout.Layout, c *Case, r *Result) {
	c.Describe(w, "    ")
	report.WriteViolations(w, shown(r))
	if l != nil {
		writePageMap(w, l, c, r.Violations)
	}
}

// shown prints each violation with its bytes; runs that compare two runs
// show only their first lines: the kind says the rest. A crash shows the
// plugin's last words: its panic's message and its own frames.
func shown(r *Result) []report.Shown {
	out := make([]report.Shown, len(r.Violations))
	found := 0
	for i, v := range r.Violations {
		lines := report.HexDiff(v)
		switch {
		case v.Kind == oracle.Crash && r.Crash != nil:
			lines = crashLines(r.Crash)
		case v.Kind == oracle.Sanitizer && found < len(r.Findings):
			lines = findingLines(r.Findings[found])
			found++
		}
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
	l, mode := v.Layout, layout.ByRecipe
	if j := fl.Minimal.Judged; j != nil { // the layout as judged: the declared recipe recorded
		l, mode = j.Layout, j.Mode
	}
	ran := h.Ran
	ran.HeadDim, ran.PageSize = l.HeadDim, l.PageSize // the row's own shape, drawn or pinned
	if j := fl.Minimal.Judged; j != nil {
		ran.SlotBits = j.SlotBits
	}
	return &report.Repro{Version: report.ReproVersion, Kernel: Name, Plugin: h.PluginArg, Variant: h.Variant, Ran: ran,
		Layout: l.Resolved().JSON(), Slots: RowSlots(v.Layout, h.Slots, h.Far, h.Scaled), BackgroundSeed: h.Seed, Case: fl.Case, Tag: v.Label, Value: mode.String(),
		Found: &report.Found{Property: fl.Property, Flaky: fl.Flaky, NeedsHistory: fl.NeedsHistory, Seed: v.Seed,
			CaseIndex: v.Outcome.Cases, Shrinks: fl.Shrinks, Reruns: report.Intermittent(fl.Reruns), Violations: vs}}, nil
}

// crashLines are a crash's last words as a report prints them under its
// line (which holds the panic's message): the plugin's own frames, else
// its last stderr lines.
func crashLines(f *plugin.Fault) []string {
	if p := f.Panic; p != nil {
		var out []string
		for _, fr := range p.Frames {
			out = append(out, "at "+fr.String())
		}
		if p.Other > 0 {
			out = append(out, fmt.Sprintf("(%d frames of the runtime, gRPC and the SDK left out)", p.Other))
		}
		return out
	}
	text := f.Stderr
	if strings.TrimSpace(text) == "" {
		return []string{"(the plugin wrote nothing to stderr)"}
	}
	return strings.Split(strings.TrimRight(text, "\n"), "\n")
}

// crashJSON is a crash in a JSON failure; nil when there was none.
func crashJSON(f *plugin.Fault) report.Object {
	if f == nil {
		return nil
	}
	o := report.Object{{Key: "call", Value: f.Call}, {Key: "detail", Value: f.Detail}}
	if f.Panic != nil {
		var frames []string
		for _, fr := range f.Panic.Frames {
			frames = append(frames, fr.String())
		}
		return append(o, report.Field{Key: "message", Value: f.Panic.Message}, report.Field{Key: "frames", Value: frames})
	}
	return append(o, report.Field{Key: "stderr", Value: f.Stderr, OmitEmpty: true})
}

// maxFindingLines bounds the lines of a sanitizer's record shown.
const maxFindingLines = 6

// findingLines are a sanitizer record's lines after its first (which the
// violation's line repeats): where, which thread, which address.
func findingLines(f plugin.Finding) []string {
	lines := f.Lines[min(1, len(f.Lines)):]
	return lines[:min(len(lines), maxFindingLines)]
}
