package results

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/kvharness/kvharness/harness/measure"
)

// ErrNoCells is returned when there is nothing to write; an empty
// benchmark file would only fail later, in compare.
var ErrNoCells = errors.New("no cells to write (did the matrix run any cell?)")

// BenchOptions configures WriteBench. The zero value is the default.
type BenchOptions struct{}

// LinesKey is the config key WriteBench sets to LinesRuns: each result
// line is one run of its cell (a pass over the matrix), as each line of
// go test -count=N is one run of its benchmark. Files written before runs
// existed lack it; their lines were chunks of one run, and compare refuses
// to count them as runs.
const (
	LinesKey  = "kvharness-lines"
	LinesRuns = "runs"
)

// WriteBench writes cells in the Go benchmark format for benchstat and
// kvharness compare: Unit lines, then per cell its config lines (only
// those that changed) and one result line per run of the cell.
//
// A line's iterations are the run's launches; ns/op is its mean launch
// (Go's own meaning of ns/op), p50-ns/op its median, and each chosen
// quantile of the cell (p99-ns/op...) is the run's, written only where the
// run has the samples to resolve it (measure.Resolvable: a p99 of fewer
// than 100 samples would be the run's maximum). GB/s and tokens/s are
// over the run's median, copy-ratio its median over the same pass's copy
// median. The
// pooled, whole-night quantiles are the cell's, in cells.jsonl and the
// tables.
//
// A version 1 cell (no runs) gets one line from its Summary, and a
// warning. Nothing is written if any cell is invalid.
func WriteBench(w io.Writer, cells []Cell, opts BenchOptions) (warnings []error, err error) {
	if len(cells) == 0 {
		return nil, ErrNoCells
	}
	b := newBenchBuf(cells)
	b.unitLines(cells)
	for i := range cells {
		if err := b.cell(&cells[i]); err != nil {
			return nil, fmt.Errorf("write benchmark text: %w", err)
		}
	}
	if _, err := w.Write(b.buf.Bytes()); err != nil {
		return nil, fmt.Errorf("write benchmark text: %w", err)
	}
	return b.warnings, nil
}

type benchBuf struct {
	buf      bytes.Buffer
	width    int               // of the widest name
	config   map[string]string // config in effect
	seen     map[string]Key    // benchmark name -> first cell with it
	results  bool              // a result line has been written
	warnings []error
}

func newBenchBuf(cells []Cell) *benchBuf {
	b := &benchBuf{config: map[string]string{}, seen: map[string]Key{}}
	for i := range cells {
		b.width = max(b.width, len(cells[i].Name()))
	}
	return b
}

func (b *benchBuf) unitLines(cells []Cell) {
	for _, u := range BenchUnits {
		if u.Better == 0 {
			continue // no direction: see BenchUnits
		}
		dir := "lower"
		if u.Better > 0 {
			dir = "higher"
		}
		fmt.Fprintf(&b.buf, "Unit %s better=%s\n", u.Name, dir)
	}
	for _, u := range quantileUnits(cells) {
		fmt.Fprintf(&b.buf, "Unit %s better=lower\n", u)
	}
	b.buf.WriteByte('\n')
}

func (b *benchBuf) cell(c *Cell) error {
	if err := c.Validate(); err != nil {
		return err
	}
	b.checkName(c)
	b.configLines(configFields(c))
	runs := c.RunSummaries()
	for _, r := range runs {
		b.resultLine(c, r)
	}
	if len(c.Runs) == 0 {
		b.warnings = append(b.warnings, fmt.Errorf("cell %s: no runs (a version 1 cell): one result line, which a comparison cannot judge; measure it again", c.Key()))
	}
	return nil
}

func (b *benchBuf) checkName(c *Cell) {
	name := c.Name()
	if first, ok := b.seen[name]; ok {
		b.warnings = append(b.warnings, fmt.Errorf("cells %s and %s share benchmark name %s; benchstat will pool their lines", first, c.Key(), name))
		return
	}
	b.seen[name] = c.Key()
}

// configLines writes the config keys whose values differ from those in
// effect. An empty value is written as "key:", which unsets the key.
func (b *benchBuf) configLines(next []Field) {
	var changed []Field
	for _, f := range next {
		if b.config[f.Key] != f.Value {
			changed = append(changed, f)
		}
	}
	if len(changed) == 0 {
		return
	}
	if b.results {
		b.buf.WriteByte('\n')
	}
	for _, f := range changed {
		fmt.Fprintf(&b.buf, "%s: %s\n", f.Key, f.Value)
		b.config[f.Key] = f.Value
	}
}

func configFields(c *Cell) []Field {
	e := c.Env
	var clocks string
	if e.SMClockMHz > 0 || e.MemClockMHz > 0 {
		clocks = fmt.Sprintf("sm=%dMHz mem=%dMHz", e.SMClockMHz, e.MemClockMHz)
	}
	f := []Field{
		{"goos", e.GOOS}, {"goarch", e.GOARCH}, {"gpu", e.Device}, {"driver", e.Driver},
		{"clocks", clocks}, {"cpu", e.CPU}, {"host", e.Host}, {"go", e.GoVersion}, {"commit", e.Commit},
		{"date", dateOf(e.Time)}, {"plugin-version", c.PluginVersion}, {LinesKey, LinesRuns},
	}
	for i := range f {
		f[i].Value = strings.Join(strings.Fields(f[i].Value), " ") // one line
	}
	return f
}

// dateOf is a night's start, to the minute, in UTC: the date plots and
// reports show. It changes every night, so compare never warns of it.
func dateOf(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return t.UTC().Format("2006-01-02T15:04Z")
}

func (b *benchBuf) resultLine(c *Cell, r RunSummary) {
	fmt.Fprintf(&b.buf, "Benchmark%-*s\t%8d", b.width, c.Name(), r.Summary.N*max(r.BatchSize, 1))
	for _, m := range runMetrics(c, r) {
		fmt.Fprintf(&b.buf, "\t%s %s", formatValue(m.value), m.unit)
	}
	b.buf.WriteByte('\n')
	b.results = true
}

// formatValue prints v with six significant digits and no exponent.
func formatValue(v float64) string {
	r, _ := strconv.ParseFloat(strconv.FormatFloat(v, 'g', 6, 64), 64)
	return strconv.FormatFloat(r, 'f', -1, 64)
}

type metric struct {
	value float64
	unit  string
}

// runMetrics are the values of one run's result line. Rates are left out
// when their inputs are missing (no bytes counted, no copy measured, or a
// zero median time); a chosen quantile where the run cannot resolve it.
func runMetrics(c *Cell, r RunSummary) []metric {
	s := r.Summary
	m := []metric{{s.Mean, UnitTime}, {s.P50, UnitP50}}
	for _, q := range r.Quantiles {
		if q.Q != 0.5 && measure.Resolvable(s.N, q.Q) {
			m = append(m, metric{q.Ns, QuantileUnit(q.Q)})
		}
	}
	if gbps, err := measure.GBPerSecond(c.BytesPerLaunch, s.P50); err == nil && gbps > 0 {
		m = append(m, metric{gbps, UnitGBps})
	}
	if tps, err := measure.TokensPerSecond(c.Tokens, s.P50); err == nil {
		m = append(m, metric{tps, UnitTokens})
	}
	copyNs := c.CopyNs
	if r.CopyNs > 0 {
		copyNs = r.CopyNs // the copy of the same pass
	}
	if ratio, err := measure.CopyRatio(s.P50, copyNs); err == nil {
		m = append(m, metric{ratio, UnitCopyRatio})
	}
	return m
}

// QuantileUnit is the unit of a chosen quantile's time: p99-ns/op for
// 0.99, p20-ns/op for 0.2, p99.9-ns/op for 0.999. benchunit tidies it to
// p99-sec/op and scales it as it does ns/op.
func QuantileUnit(q float64) string {
	return "p" + strconv.FormatFloat(100*q, 'f', -1, 64) + "-ns/op"
}

// quantileUnits lists the chosen quantiles' units the cells use, other
// than the median's (UnitP50), in order of first use.
func quantileUnits(cells []Cell) []string {
	seen := map[string]bool{UnitP50: true}
	var out []string
	for i := range cells {
		for _, q := range cells[i].Quantiles {
			if u := QuantileUnit(q.Q); !seen[u] {
				seen[u] = true
				out = append(out, u)
			}
		}
	}
	return out
}
