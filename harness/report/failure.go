package report

import (
	"fmt"
	"io"
	"strings"

	"github.com/kvharness/kvharness/harness/check"
	"github.com/kvharness/kvharness/harness/layout"
	"github.com/kvharness/kvharness/harness/oracle"
	"github.com/kvharness/kvharness/harness/property"
	"github.com/kvharness/kvharness/harness/workload"
)

// MaxViolations bounds the violations printed for one failure; the repro
// file and JSON output keep the first ones too.
const MaxViolations = 6

// Failure is one failing combination, with what is needed to print it.
type Failure struct {
	Plugin, Variant string
	Layout          *layout.Layout
	Verdict         property.Verdict
	ReproPath       string
	Test            string // go test -run line, when a test found it
	Replayed        bool   // the case came from a repro file, not a search
}

// WriteFailure prints the minimal case and its violations.
func WriteFailure(w io.Writer, f Failure) {
	o := f.Verdict.Outcome
	fl := o.Failure
	m := fl.Minimal
	status := "FAIL"
	if fl.Flaky {
		status = "FLAKY"
	}
	fmt.Fprintf(w, "%s %s%s · %s · padding %s · property %s\n", status, f.Plugin, variantSuffix(f.Variant),
		f.Layout.Name, f.Verdict.Label, fl.Property)
	switch {
	case fl.Flaky && f.Replayed:
		fmt.Fprintf(w, "  replayed case failed once, then passed when re-run:\n")
	case fl.Flaky:
		fmt.Fprintf(w, "  case %d of seed %d failed once, then passed when re-run; not shrunk\n", o.Cases, f.Verdict.Seed)
	case f.Replayed:
		fmt.Fprintf(w, "  replayed case, confirmed by a re-run:\n")
	default:
		fmt.Fprintf(w, "  found at case %d of seed %d, confirmed by a re-run, shrunk in %d steps to:\n", o.Cases, f.Verdict.Seed, fl.Shrinks)
	}
	WriteResult(w, f.Layout, m)
	if fl.Flaky {
		if fl.Rerun != nil {
			fmt.Fprintf(w, "  re-run: %d violations\n", len(fl.Rerun.Violations))
		} else {
			fmt.Fprintf(w, "  re-run: the plugin faulted (see the fault below)\n")
		}
	}
	if f.ReproPath != "" {
		fmt.Fprintf(w, "  replay: kvharness repro %s\n", f.ReproPath)
	}
	if f.Test != "" {
		fmt.Fprintf(w, "  test:   %s\n", f.Test)
	}
}

// WriteResult prints a checked case: its rows, its violations with
// want/got bytes, and a page map.
func WriteResult(w io.Writer, l *layout.Layout, r *check.Result) {
	r.Case.Describe(w, "    ")
	writeViolations(w, r.Violations)
	if s, ok := r.Case.(*workload.Store); ok && l != nil {
		writePageMap(w, l, s, r.Violations)
	}
}

func variantSuffix(v string) string {
	if v == "" {
		return ""
	}
	return " --variant " + v
}

func writeViolations(w io.Writer, vs []oracle.Violation) {
	fmt.Fprintf(w, "  %d violation%s:\n", len(vs), plural(len(vs)))
	for i, v := range vs {
		if i == MaxViolations {
			fmt.Fprintf(w, "    … %d more\n", len(vs)-i)
			break
		}
		fmt.Fprintf(w, "    %s\n", v)
		lines := hexDiff(v)
		if v.Kind == oracle.Determinism || v.Kind == oracle.Differential {
			lines = lines[:min(len(lines), 3)] // the first bytes say enough; the kind above says the rest
		}
		for _, line := range lines {
			fmt.Fprintf(w, "      %s\n", line)
		}
	}
}

func plural(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}

// hexDiff prints want and got 16 bytes a line, go-cmp style, with ^ under
// the bytes that differ.
func hexDiff(v oracle.Violation) []string {
	if len(v.Want) == 0 && len(v.Got) == 0 {
		return nil
	}
	var out []string
	for lo := 0; lo < max(len(v.Want), len(v.Got)); lo += 16 {
		want, got := window(v.Want, lo), window(v.Got, lo)
		out = append(out, fmt.Sprintf("- want @%-6d %s", v.Off+lo, hexBytes(want)))
		out = append(out, fmt.Sprintf("+ got  @%-6d %s", v.Off+lo, hexBytes(got)))
		if marks := diffMarks(want, got); strings.TrimSpace(marks) != "" {
			out = append(out, "               "+marks)
		}
	}
	return out
}

func window(b []byte, lo int) []byte {
	if lo >= len(b) {
		return nil
	}
	return b[lo:min(lo+16, len(b))]
}

func hexBytes(b []byte) string {
	if b == nil {
		return "(background)"
	}
	parts := make([]string, len(b))
	for i, x := range b {
		parts[i] = fmt.Sprintf("%02x", x)
	}
	return strings.Join(parts, " ")
}

func diffMarks(a, b []byte) string {
	var s strings.Builder
	for i := range max(len(a), len(b)) {
		if i < len(a) && i < len(b) && a[i] == b[i] {
			s.WriteString("   ")
		} else {
			s.WriteString("^^ ")
		}
	}
	return strings.TrimRight(s.String(), " ")
}
