package compare

import (
	"fmt"
	"io"
	"math"
	"strings"
	"text/tabwriter"

	"golang.org/x/perf/benchunit"
)

// WriteText renders r as a table per unit, benchstat-style: median ±
// confidence interval per side, the change and its p-value, and the
// verdict. Row warnings become numbered footnotes; report warnings and
// a verdict tally follow.
func WriteText(w io.Writer, r *Report) error {
	var b strings.Builder
	fmt.Fprintf(&b, "base: %s\nnew:  %s\n", r.Base, r.New)
	if r.Rerun != "" {
		fmt.Fprintf(&b, "rerun: %s (a regression counts only when the rerun shows it too)\n", r.Rerun)
	}
	fmt.Fprintf(&b, "Mann–Whitney U-test, alpha %v; regression threshold %v%%; median ± %v%% CI\n",
		r.Options.Alpha, 100*r.Options.Threshold, 100*r.Options.Confidence)
	if !r.Options.Absolute {
		fmt.Fprintf(&b, "kernel times judged on their change and on it net of the drift of the floor measured beside them (empty launch or copy), both past the threshold (per-launch rows: %v%%) with the medians' intervals apart; floors are references, rates derived\n",
			100*r.Options.LatencyThreshold)
	}
	notes := &footnotes{index: map[string]int{}}
	for start := 0; start < len(r.Rows); {
		end := start + 1
		for end < len(r.Rows) && r.Rows[end].Unit == r.Rows[start].Unit {
			end++
		}
		writeUnitTable(&b, r.Rows[start:end], r.Options.Alpha, notes)
		start = end
	}
	b.WriteString("\n" + tally(r) + "\n")
	notes.write(&b)
	for _, w := range r.Warnings {
		fmt.Fprintf(&b, "warning: %v\n", w)
	}
	_, err := io.WriteString(w, b.String())
	return err
}

func writeUnitTable(b *strings.Builder, rows []Row, alpha float64, notes *footnotes) {
	fmt.Fprintf(b, "\n%s (%s)\n", rows[0].Unit, betterText(rows[0].Better))
	tw := tabwriter.NewWriter(b, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "name\tbase\tnew\tdelta\tverdict")
	for _, row := range rows {
		old, next := formatSides(row)
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s%s\n", row.Name, old, next, formatDelta(row, alpha), verdictText(row.Verdict), notes.marks(row.Warnings))
	}
	tw.Flush()
}

func betterText(better int) string {
	switch better {
	case -1:
		return "lower is better"
	case 1:
		return "higher is better"
	}
	return "direction unknown"
}

// formatSides scales both medians alike, as benchunit would for display
// (12.35µ for seconds, 1.235k for GB/s).
func formatSides(row Row) (old, next string) {
	sc := benchunit.CommonScale([]float64{row.Old.Center, row.New.Center}, benchunit.ClassOf(row.Unit))
	side := func(s Side) string {
		if s.N == 0 {
			return "-"
		}
		return sc.Format(s.Center) + " ± " + s.PctRangeString()
	}
	return side(row.Old), side(row.New)
}

func formatDelta(row Row, alpha float64) string {
	switch {
	case row.Verdict == Missing:
		return "-"
	case row.Verdict == Insufficient:
		return fmt.Sprintf("? (n=%d+%d)", row.Old.N, row.New.N)
	}
	d := "~"
	if row.P < alpha {
		d = fmt.Sprintf("%+.2f%%", row.DeltaPct)
		if math.IsInf(row.DeltaPct, 0) {
			d = fmt.Sprintf("%+.0f%%", row.DeltaPct)
		}
		if row.Ref != "" {
			d += fmt.Sprintf(" net %+.2f%%", row.NetDeltaPct)
		}
	}
	return fmt.Sprintf("%s (p=%.3f n=%d+%d)", d, row.P, row.Old.N, row.New.N)
}

func verdictText(v Verdict) string {
	if v == Regression {
		return "REGRESSION"
	}
	return string(v)
}

// tally is a one-line count of rows per verdict, such as
// "regression: 2, unchanged: 12".
func tally(r *Report) string {
	var parts []string
	for _, v := range verdicts {
		if n := r.Count(v); n > 0 {
			parts = append(parts, fmt.Sprintf("%s: %d", v, n))
		}
	}
	return strings.Join(parts, ", ")
}
