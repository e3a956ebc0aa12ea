package benchrun

import (
	"encoding/csv"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/kvharness/kvharness/harness/measure"
	"github.com/kvharness/kvharness/harness/results"
)

// A Format is how a night's table is written.
type Format string

// Formats of a night's table (kvharness bench --format).
const (
	Text     Format = "text" // aligned columns, times scaled: table.txt
	Markdown Format = "md"   // a GitHub table, for a pull request comment
	CSV      Format = "csv"  // every cell, raw numbers in ns, for dashboards
	JSON     Format = "json" // every cell, SummarySchema
)

// SummarySchema is the JSON form of a night's table.
const SummarySchema = "kvharness.summary/v1"

// ParseFormat checks a --format value.
func ParseFormat(s string) (Format, error) {
	switch f := Format(s); f {
	case Text, Markdown, CSV, JSON:
		return f, nil
	}
	return "", fmt.Errorf("--format %q: want text, md, csv or json", s)
}

// WriteTable prints cells in format f: for text and markdown one line per
// kernel cell (a store, a load) with the references it is judged against
// (the same-size copy, the empty launch of its mode); for CSV and JSON
// every cell.
func WriteTable(w io.Writer, cells []results.Cell, f Format) error {
	switch f {
	case Markdown:
		return writeMarkdown(w, cells)
	case CSV:
		return writeCSV(w, cells)
	case JSON:
		return writeJSON(w, cells)
	}
	return writeText(w, cells)
}

// row is one kernel cell with its references, as the tables show it.
type row struct {
	c, cp, em results.Cell
}

func kernelRows(cells []results.Cell) []row {
	ref := map[string]results.Cell{}
	for _, c := range cells {
		if results.IsReference(c.Kernel) {
			ref[refKey(c.Identity)] = c
		}
	}
	var out []row
	for _, c := range cells {
		if !results.IsReference(c.Kernel) {
			out = append(out, row{c, ref[refKey(withKernel(c.Identity, results.KernelCopy, c.Tokens, results.Eager))],
				ref[refKey(withKernel(c.Identity, results.KernelEmpty, 1, c.Mode))]})
		}
	}
	return out
}

// header says what night the cells are: commit, device, date, runs, and
// how the cells drew their data when that is not one set of single
// random slots.
func header(cells []results.Cell) string {
	if len(cells) == 0 {
		return ""
	}
	e := cells[0].Env
	parts := []string{"commit " + orDash(e.Commit), "device " + Device(e)}
	if !e.Time.IsZero() {
		parts = append(parts, e.Time.UTC().Format("2006-01-02 15:04 UTC"))
	}
	parts = append(parts, fmt.Sprintf("%d runs per cell", len(cells[0].RunSummaries())))
	if line := drawLine(cells); line != "" {
		parts = append(parts, line)
	}
	return strings.Join(parts, "; ")
}

// Device names where a night ran: the GPU, or the CPU's model.
func Device(e results.Env) string {
	switch {
	case e.Device != "" && e.Device != "cpu":
		return e.Device
	case e.CPU != "":
		return "cpu (" + e.CPU + ")"
	}
	return orDash(e.Device)
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func columns(cells []results.Cell) []string {
	cols := []string{"plugin", "layout", "tokens", "mode", "cache", "timing"}
	for _, q := range quantilesOf(cells) {
		cols = append(cols, qName(q))
	}
	return append(cols, "GB/s", "% peak", "copy p50", "vs copy", "empty p50", "runs × samples", "noise", "stop")
}

func (r row) values(qs []float64) []string {
	c := r.c
	v := []string{c.Plugin, c.Layout, strconv.Itoa(c.Tokens), string(c.Mode), string(c.Cache), string(c.Timing)}
	for _, q := range qs {
		v = append(v, Duration(quantile(c, q)))
	}
	return append(v, rate(c.GBps), pct(c.PctOfPeak), Duration(r.cp.Summary.P50), ratio(c.Summary.P50, r.cp.Summary.P50),
		Duration(r.em.Summary.P50), fmt.Sprintf("%d × %d", len(c.RunSummaries()), c.Summary.N/max(len(c.RunSummaries()), 1)),
		fmt.Sprintf("%.1f%%", 100*c.Summary.Noise), stopText(c.Stop))
}

func writeText(w io.Writer, cells []results.Cell) error {
	fmt.Fprintln(w, header(cells))
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, strings.Join(columns(cells), "\t")+"\t")
	qs := quantilesOf(cells)
	for _, r := range kernelRows(cells) {
		fmt.Fprintln(tw, strings.Join(r.values(qs), "\t")+"\t")
	}
	return tw.Flush()
}

func writeMarkdown(w io.Writer, cells []results.Cell) error {
	var b strings.Builder
	fmt.Fprintf(&b, "**kvharness bench**: %s\n\n", header(cells))
	cols := columns(cells)
	b.WriteString("| " + strings.Join(cols, " | ") + " |\n|" + strings.Repeat("---|", len(cols)) + "\n")
	qs := quantilesOf(cells)
	for _, r := range kernelRows(cells) {
		b.WriteString("| " + strings.Join(r.values(qs), " | ") + " |\n")
	}
	_, err := io.WriteString(w, b.String())
	return err
}

func writeCSV(w io.Writer, cells []results.Cell) error {
	qs := quantilesOf(cells)
	cw := csv.NewWriter(w)
	head := []string{"name", "kernel", "plugin", "plugin_version", "variant", "layout", "head_dim", "page_size", "tokens", "slot_run", "rotate",
		"mode", "cache", "timing", "batch_size", "runs", "samples", "mean_ns"}
	for _, q := range qs {
		head = append(head, qName(q)+"_ns")
	}
	cw.Write(append(head, "gb_per_s", "copy_ratio", "noise", "stop", "device", "commit", "date"))
	for _, c := range cells {
		rec := []string{c.Name(), c.Kernel, c.Plugin, c.PluginVersion, c.Variant, c.Layout, itoa(c.HeadDim), itoa(c.PageSize), itoa(c.Tokens),
			itoa(c.SlotRun), itoa(c.Rotate), string(c.Mode), string(c.Cache), string(c.Timing), itoa(c.BatchSize),
			itoa(len(c.RunSummaries())), itoa(c.Summary.N), num(c.Summary.Mean)}
		for _, q := range qs {
			rec = append(rec, num(quantile(c, q)))
		}
		cw.Write(append(rec, num(c.GBps), num(c.CopyRatio), num(c.Summary.Noise), string(c.Stop.Kind), Device(c.Env), c.Env.Commit, c.Env.Time.UTC().Format("2006-01-02T15:04:05Z")))
	}
	cw.Flush()
	return cw.Error()
}

// summaryCell is a cell in a night's JSON summary: its numbers without
// raw samples or run details.
type summaryCell struct {
	Name      string                  `json:"name"`
	Key       results.Key             `json:"key"`
	Kernel    string                  `json:"kernel"`
	Runs      int                     `json:"runs"`
	Samples   int                     `json:"samples"`
	MeanNs    float64                 `json:"mean_ns"`
	Quantiles []results.QuantileValue `json:"quantiles"`
	GBps      float64                 `json:"gb_per_s,omitempty"`
	CopyRatio float64                 `json:"copy_ratio,omitempty"`
	Noise     float64                 `json:"noise"`
	Stop      string                  `json:"stop"`
}

func writeJSON(w io.Writer, cells []results.Cell) error {
	out := struct {
		Schema string        `json:"schema"`
		Env    results.Env   `json:"env"`
		Cells  []summaryCell `json:"cells"`
	}{Schema: SummarySchema}
	if len(cells) > 0 {
		out.Env = cells[0].Env
	}
	for _, c := range cells {
		out.Cells = append(out.Cells, summaryCell{c.Name(), c.Key(), c.Kernel, len(c.RunSummaries()), c.Summary.N, c.Summary.Mean,
			c.Quantiles, c.GBps, c.CopyRatio, c.Summary.Noise, c.Stop.String()})
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(out)
}

// quantilesOf is the chosen quantiles of the cells, the median first.
func quantilesOf(cells []results.Cell) []float64 {
	out := []float64{0.5}
	for _, c := range cells {
		for _, q := range c.Quantiles {
			if !slices.Contains(out, q.Q) {
				out = append(out, q.Q)
			}
		}
	}
	return out
}

// quantile is c's pooled q-quantile: chosen, or from its summary.
func quantile(c results.Cell, q float64) float64 {
	for _, v := range c.Quantiles {
		if v.Q == q {
			return v.Ns
		}
	}
	switch q {
	case 0.5:
		return c.Summary.P50
	case 0.9:
		return c.Summary.P90
	case 0.99:
		return c.Summary.P99
	case 0.999:
		return c.Summary.P999
	}
	return 0
}

func qName(q float64) string { return "p" + strconv.FormatFloat(100*q, 'f', -1, 64) }

func stopText(r measure.StopReason) string {
	if r.Runs > 1 {
		return fmt.Sprintf("%s %d/%d", r.Kind, r.ConvergedRuns, r.Runs)
	}
	return string(r.Kind)
}

// drawLine says how the cells drew their data when it is not one set of
// single random slots, repeated: the table's columns do not show it.
func drawLine(cells []results.Cell) string {
	for _, c := range cells {
		var parts []string
		if c.Rotate > 1 {
			parts = append(parts, fmt.Sprintf("launches rotate over %d pools", c.Rotate))
		}
		if c.SlotRun > 1 {
			parts = append(parts, fmt.Sprintf("slots in runs of %d", c.SlotRun))
		}
		if len(parts) > 0 {
			return strings.Join(parts, "; ")
		}
	}
	return ""
}

func withKernel(id results.Identity, kernel string, tokens int, mode results.Mode) results.Identity {
	id.Kernel, id.Tokens, id.Mode = kernel, tokens, mode
	return id
}

// refKey identifies a reference cell regardless of its batch size.
func refKey(id results.Identity) string {
	return fmt.Sprintf("%s|%s|%s|%d|%s|%s|%s", id.Plugin, id.Kernel, id.Layout, id.Tokens, id.Mode, id.Cache, id.Timing)
}

// Duration is ns scaled to three significant digits and its unit: 93.0ns,
// 12.8µs, 8.09ms, 2.62s; "-" for none.
func Duration(ns float64) string {
	if ns <= 0 {
		return "-"
	}
	for _, u := range []struct {
		unit  string
		scale float64
	}{{"s", 1e9}, {"ms", 1e6}, {"µs", 1e3}} {
		if ns >= u.scale {
			return sig3(ns/u.scale) + u.unit
		}
	}
	return sig3(ns) + "ns"
}

func sig3(v float64) string {
	switch {
	case v >= 100:
		return strconv.FormatFloat(v, 'f', 0, 64)
	case v >= 10:
		return strconv.FormatFloat(v, 'f', 1, 64)
	}
	return strconv.FormatFloat(v, 'f', 2, 64)
}

func rate(gbps float64) string {
	if gbps <= 0 {
		return "-"
	}
	return sig3(gbps)
}

func pct(p float64) string {
	if p == 0 {
		return "-"
	}
	return fmt.Sprintf("%.0f%%", p)
}

func ratio(a, b float64) string {
	if a == 0 || b == 0 {
		return "-"
	}
	return fmt.Sprintf("%.0f%%", 100*b/a)
}

func itoa(n int) string { return strconv.Itoa(n) }

func num(v float64) string { return strconv.FormatFloat(v, 'g', 6, 64) }
