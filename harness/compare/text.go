package compare

import (
	"fmt"
	"io"
	"math"
	"slices"
	"strings"
	"text/tabwriter"

	"golang.org/x/perf/benchunit"
)

// A Format is how a report is written.
type Format string

// Report formats (kvharness compare --format).
const (
	Text     Format = "text"
	Markdown Format = "md"   // for a pull request comment
	CSV      Format = "csv"  // a row per cell, for dashboards
	JSON     Format = "json" // ReportSchema
)

// ParseFormat checks a --format value.
func ParseFormat(s string) (Format, error) {
	switch f := Format(s); f {
	case Text, Markdown, CSV, JSON:
		return f, nil
	}
	return "", fmt.Errorf("--format %q: want text, md, csv or json", s)
}

// WriteOptions says what a written report shows.
type WriteOptions struct {
	Format Format
	// OnlySlower lists only the slower cells (the counts still cover all).
	OnlySlower bool
}

// Write renders r: the verdict counts first, then a line per cell, slower
// cells first. Floors (references) are summed up in a line in text and
// markdown; CSV and JSON hold every cell.
func Write(w io.Writer, r *Report, o WriteOptions) error {
	switch o.Format {
	case CSV:
		return writeCSV(w, r, o)
	case JSON:
		return writeJSON(w, r, o)
	case Markdown:
		return writeMarkdown(w, r, o)
	}
	return writeText(w, r, o)
}

// WriteText renders r as text.
func WriteText(w io.Writer, r *Report) error { return Write(w, r, WriteOptions{Format: Text}) }

func writeText(w io.Writer, r *Report, o WriteOptions) error {
	var b strings.Builder
	for _, line := range headLines(r) {
		b.WriteString(line + "\n")
	}
	cells, common := listed(r, o), commonFields(r.Cells)
	if len(common) > 0 {
		fmt.Fprintf(&b, "every cell: %s\n", strings.Join(common, " "))
	}
	if len(cells) > 0 {
		b.WriteByte('\n')
		tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
		fmt.Fprintln(tw, "verdict\tcell\tbase\tnew\tchange\tevidence")
		for _, c := range cells {
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", verdictText(c.Verdict), shortName(c.Name, common), side(c.Row, c.Old), side(c.Row, c.New), why(c), evidence(c, r.Options.Alpha))
		}
		tw.Flush()
	}
	for _, line := range tailLines(r) {
		b.WriteString(line + "\n")
	}
	_, err := io.WriteString(w, b.String())
	return err
}

func writeMarkdown(w io.Writer, r *Report, o WriteOptions) error {
	var b strings.Builder
	head := headLines(r)
	fmt.Fprintf(&b, "**kvharness compare: %s**\n\n", head[2])
	for _, line := range append(head[:2], head[3:]...) {
		b.WriteString(line + "  \n")
	}
	cells, common := listed(r, o), commonFields(r.Cells)
	if len(common) > 0 {
		fmt.Fprintf(&b, "every cell: `%s`  \n", strings.Join(common, " "))
	}
	var judged, same []Cell
	for _, c := range cells {
		if c.Verdict == Same {
			same = append(same, c)
		} else {
			judged = append(judged, c)
		}
	}
	mdTable(&b, judged, common, r.Options.Alpha)
	if len(same) > 0 {
		fmt.Fprintf(&b, "\n<details><summary>%d cells the same</summary>\n\n", len(same))
		mdTable(&b, same, common, r.Options.Alpha)
		b.WriteString("\n</details>\n")
	}
	if tail := tailLines(r); len(tail) > 0 {
		b.WriteString("\n" + strings.Join(tail, "  \n") + "\n")
	}
	_, err := io.WriteString(w, b.String())
	return err
}

func mdTable(b *strings.Builder, cells []Cell, common []string, alpha float64) {
	if len(cells) == 0 {
		return
	}
	b.WriteString("\n| verdict | cell | base | new | change | evidence |\n|---|---|---|---|---|---|\n")
	for _, c := range cells {
		v := verdictText(c.Verdict)
		if c.Verdict == Slower {
			v = "**" + v + "**"
		}
		fmt.Fprintf(b, "| %s | `%s` | %s | %s | %s | %s |\n", v, shortName(c.Name, common), side(c.Row, c.Old), side(c.Row, c.New),
			strings.ReplaceAll(why(c), "|", "/"), evidence(c, alpha))
	}
}

// headLines are the files, the counts and how cells were judged.
func headLines(r *Report) []string {
	lines := []string{"base: " + fileLine(r.Base, r.Config[0]), "new:  " + fileLine(r.New, r.Config[1])}
	lines = append(lines, tally(r))
	o := r.Options
	how := fmt.Sprintf("judged on %s over runs: Mann–Whitney U-test, alpha %v; slower or faster past %v%% (per-launch cells %v%%)",
		o.Metric, o.Alpha, 100*o.Threshold, 100*o.LatencyThreshold)
	if !o.Absolute {
		how += ", on its own and net of the floor measured beside it (empty launch or copy)"
	}
	if o.Apart {
		how += ", the medians' intervals apart"
	}
	lines = append(lines, how)
	if r.Rerun != "" {
		lines = append(lines, "rerun: "+r.Rerun+" (a cell is slower only when the rerun finds it slower too)")
	}
	return lines
}

func fileLine(name string, config map[string]string) string {
	var parts []string
	for _, k := range []string{"commit", "gpu", "cpu", "date"} {
		if v := config[k]; v != "" && !(k == "gpu" && v == "cpu") {
			parts = append(parts, k+" "+v)
		}
	}
	if len(parts) == 0 {
		return name
	}
	return name + " (" + strings.Join(parts, ", ") + ")"
}

// tally counts the cells per verdict: "2 slower, 0 unsure, 34 same...".
func tally(r *Report) string {
	var parts []string
	for _, v := range verdicts {
		if n := r.Count(v); n > 0 || v == Slower || v == Unsure {
			parts = append(parts, fmt.Sprintf("%d %s", n, v))
		}
	}
	return strings.Join(parts, ", ")
}

// tailLines sum up the floors and missing cells, and the warnings.
func tailLines(r *Report) []string {
	var out []string
	var drift []float64
	for _, c := range r.Cells {
		if c.Verdict == Reference {
			drift = append(drift, c.DeltaPct)
		}
	}
	if len(drift) > 0 {
		slices.Sort(drift)
		out = append(out, fmt.Sprintf("\n%d floors (copies, empty launches) not judged: median change %+.1f%%, from %+.1f%% to %+.1f%%",
			len(drift), drift[len(drift)/2], drift[0], drift[len(drift)-1]))
	}
	if ms := r.with(func(c Cell) bool { return c.Verdict == Missing && c.Old.N > 0 }); len(ms) > 0 {
		out = append(out, fmt.Sprintf("%d cells of the base are not in the new file, such as %s", len(ms), ms[0].Name))
	}
	if ms := r.with(func(c Cell) bool { return c.Verdict == Missing && c.Old.N == 0 }); len(ms) > 0 {
		out = append(out, fmt.Sprintf("%d cells are new (no baseline yet), such as %s", len(ms), ms[0].Name))
	}
	for _, w := range r.Warnings {
		out = append(out, fmt.Sprintf("warning: %v", w))
	}
	return out
}

// listed is the cells a written report lists: slower first, then unsure,
// faster and same; floors and missing cells are summed up instead.
func listed(r *Report, o WriteOptions) []Cell {
	var out []Cell
	for _, v := range verdicts[:4] {
		if o.OnlySlower && v != Slower {
			continue
		}
		out = append(out, r.with(func(c Cell) bool { return c.Verdict == v })...)
	}
	return out
}

// commonFields are the key=value parts every cell's name shares: said
// once above the table, left out of its rows.
func commonFields(cells []Cell) []string {
	if len(cells) == 0 {
		return nil
	}
	count := map[string]int{}
	var order []string
	for _, c := range cells {
		for _, p := range strings.Split(c.Name, "/")[1:] {
			if count[p] == 0 {
				order = append(order, p)
			}
			count[p]++
		}
	}
	var out []string
	for _, p := range order {
		if count[p] == len(cells) && len(cells) > 1 {
			out = append(out, p)
		}
	}
	return out
}

func shortName(name string, common []string) string {
	parts := strings.Split(name, "/")
	out := []string{parts[0]}
	for _, p := range parts[1:] {
		if !slices.Contains(common, p) {
			out = append(out, p)
		}
	}
	return strings.Join(out, " ")
}

// side is a deciding unit's median over runs ± its interval, scaled.
func side(r Row, s Side) string {
	if s.N == 0 {
		return "-"
	}
	sc := benchunit.CommonScale([]float64{r.Old.Center, r.New.Center}, benchunit.ClassOf(r.Unit))
	unit := ""
	if strings.HasSuffix(r.Unit, "sec/op") {
		unit = "s"
	}
	return sc.Format(s.Center) + unit + " ± " + s.PctRangeString()
}

func why(c Cell) string {
	if c.Lacks != "" {
		return c.Lacks
	}
	return c.Why
}

// evidence is the other units' changes in a line, "*" marking those
// significant: "mean +9.6%* p99 +12.0% GB/s -9.0%*".
func evidence(c Cell, alpha float64) string {
	var parts []string
	for _, r := range c.Evidence {
		name := unitName(r.Unit)
		if r.Unit == c.Unit || name == "" || r.Old.N == 0 || r.New.N == 0 || math.IsNaN(r.DeltaPct) {
			continue
		}
		mark := ""
		if r.P < alpha {
			mark = "*"
		}
		parts = append(parts, fmt.Sprintf("%s %+.1f%%%s", name, r.DeltaPct, mark))
	}
	return strings.Join(parts, " ")
}

// unitName is a unit's short name in the evidence; "" leaves it out
// (tokens/s moves exactly as GB/s does).
func unitName(unit string) string {
	switch {
	case unit == "sec/op":
		return "mean"
	case unit == "tokens/s":
		return ""
	case unit == "copy-ratio":
		return "vs-copy"
	case strings.HasSuffix(unit, "-sec/op"):
		return strings.TrimSuffix(unit, "-sec/op")
	}
	return unit
}

func verdictText(v Verdict) string {
	if v == Slower {
		return "SLOWER"
	}
	return string(v)
}
