package results

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/kvharness/kvharness/harness/measure"
)

// DefaultBenchLines is how many result lines WriteBench emits per cell.
// benchstat's U-test needs at least 4 per side to reach p < 0.05 and 6
// for a 95% confidence interval on the median; its docs recommend 10.
const DefaultBenchLines = 10

// ErrNoCells is returned when there is nothing to write; an empty
// benchmark file would only fail later, in compare.
var ErrNoCells = errors.New("no cells to write (did the matrix run any cell?)")

// BenchOptions configures WriteBench. The zero value is the default.
type BenchOptions struct {
	// Lines is the number of result lines per cell; zero means
	// DefaultBenchLines.
	Lines int
}

// WriteBench writes cells in the Go benchmark format for benchstat and
// kvharness compare: Unit lines, then per cell its config lines (only
// those that changed) and its result lines.
//
// A cell's raw samples are split, in the order taken, into Lines
// contiguous chunks of nearly equal size, and each chunk becomes one
// result line: iterations are the launches in the chunk; times are the
// chunk's median and tail percentiles; rates use the chunk's median. A
// single line per cell would give benchstat one sample and no test;
// chunk statistics give it Lines independent-ish repeats, and contiguous
// chunks keep drift visible as spread instead of averaging it away.
//
// Tail units are per chunk: p99 of a chunk of n samples is close to the
// chunk maximum when n < 100. Compare nights run with the same Criterion
// (similar sample counts), or read the whole-run tails in the JSON log.
//
// A cell without raw samples gets one line from its Summary, and a
// warning. Nothing is written if any cell is invalid.
func WriteBench(w io.Writer, cells []Cell, opts BenchOptions) (warnings []error, err error) {
	if len(cells) == 0 {
		return nil, ErrNoCells
	}
	b := newBenchBuf(cells, opts)
	b.unitLines()
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
	lines    int
	width    int               // of the widest name
	config   map[string]string // config in effect
	seen     map[string]Key    // benchmark name -> first cell with it
	results  bool              // a result line has been written
	warnings []error
}

func newBenchBuf(cells []Cell, opts BenchOptions) *benchBuf {
	b := &benchBuf{lines: opts.Lines, config: map[string]string{}, seen: map[string]Key{}}
	if b.lines <= 0 {
		b.lines = DefaultBenchLines
	}
	for i := range cells {
		b.width = max(b.width, len(cells[i].Name()))
	}
	return b
}

func (b *benchBuf) unitLines() {
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
	b.buf.WriteByte('\n')
}

func (b *benchBuf) cell(c *Cell) error {
	if err := c.Validate(); err != nil {
		return err
	}
	b.checkName(c)
	b.configLines(configFields(c))
	sums, err := chunkSummaries(c, b.lines)
	if err != nil {
		return fmt.Errorf("cell %s: %w", c.Key(), err)
	}
	for _, s := range sums {
		b.resultLine(c, s)
	}
	if len(sums) < 4 {
		b.warnings = append(b.warnings, fmt.Errorf("cell %s: %d result line(s); a U-test needs at least 4 per side to call a change significant (keep raw samples and take at least 4)", c.Key(), len(sums)))
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
		{"clocks", clocks}, {"host", e.Host}, {"go", e.GoVersion}, {"commit", e.Commit},
		{"plugin-version", c.PluginVersion},
	}
	for i := range f {
		f[i].Value = strings.Join(strings.Fields(f[i].Value), " ") // one line
	}
	return f
}

func (b *benchBuf) resultLine(c *Cell, s measure.Summary) {
	fmt.Fprintf(&b.buf, "Benchmark%-*s\t%8d", b.width, c.Name(), s.N*max(c.BatchSize, 1))
	for _, m := range lineMetrics(c, s) {
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
