package plot

import (
	"cmp"
	"fmt"
	"io"
	"maps"
	"math"
	"slices"
	"strings"

	"github.com/kvharness/kvharness/harness/results"
	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"
)

// A series is the cells that differ only in tokens.
type series struct {
	label string
	pts   plotter.XYs // (tokens, GB/s), by tokens
}

// Throughput writes a PNG of GB/s against tokens to w, both axes log, so
// a series ten times under the roofline still has a shape: one series per
// combination of the other identity fields, and the same-size copy as a
// dashed roofline series (the best copy GB/s seen at each token count)
// when any cell measured it. Every cell needs GB/s.
func Throughput(w io.Writer, cells []results.Cell, o Options) error {
	if len(cells) == 0 {
		return ErrNoCells
	}
	for _, c := range cells {
		if c.GBps <= 0 {
			return &MissingDataError{c.Key(), "no GB/s (count bytes_per_launch and call Cell.Derive)"}
		}
	}
	p := newTokensPlot(o.title("Store throughput vs size"), "GB/s (bytes read + written / median time)")
	ss, roof := groupSeries(cells), rooflinePoints(cells)
	p.Y.Min, p.Y.Max = logRange(yRange(ss, roof))
	legend := newLegend()
	if err := addSeries(p, &legend, ss, roof); err != nil {
		return err
	}
	padTokens(&p.X)
	return render(p, legend, w, o)
}

func yRange(ss []series, roof plotter.XYs) (lo, hi float64) {
	lo, hi = ss[0].pts[0].Y, ss[0].pts[0].Y
	for _, s := range append(ss, series{pts: roof}) {
		for _, pt := range s.pts {
			lo, hi = min(lo, pt.Y), max(hi, pt.Y)
		}
	}
	return lo, hi
}

// groupSeries groups cells by every name field but tokens, in order of
// first appearance.
func groupSeries(cells []results.Cell) []series {
	names := labels(cells, "tokens")
	index := map[string]int{}
	var out []series
	for i, c := range cells {
		k := seriesKey(c)
		j, ok := index[k]
		if !ok {
			j = len(out)
			index[k] = j
			out = append(out, series{label: names[i]})
		}
		out[j].pts = append(out[j].pts, plotter.XY{X: float64(c.Tokens), Y: c.GBps})
	}
	for _, s := range out {
		slices.SortFunc(s.pts, func(a, b plotter.XY) int { return cmp.Compare(a.X, b.X) })
	}
	return out
}

func seriesKey(c results.Cell) string {
	var b strings.Builder
	for _, f := range c.Fields() {
		if f.Key != "tokens" {
			fmt.Fprintf(&b, "/%s=%s", f.Key, f.Value)
		}
	}
	return b.String()
}

// rooflinePoints is the best copy GB/s measured at each token count.
func rooflinePoints(cells []results.Cell) plotter.XYs {
	best := map[int]float64{}
	for _, c := range cells {
		if c.CopyGBps > 0 {
			best[c.Tokens] = max(best[c.Tokens], c.CopyGBps)
		}
	}
	var pts plotter.XYs
	for _, t := range slices.Sorted(maps.Keys(best)) {
		pts = append(pts, plotter.XY{X: float64(t), Y: best[t]})
	}
	return pts
}

func addSeries(p *plot.Plot, legend *plot.Legend, ss []series, roof plotter.XYs) error {
	for i, s := range ss {
		l, pts, err := plotter.NewLinePoints(s.pts)
		if err != nil {
			return fmt.Errorf("plot series %q: %w", s.label, err)
		}
		l.Color, pts.Color, l.Width = plotutil.Color(i), plotutil.Color(i), 1.5
		pts.Shape = plotutil.Shape(i)
		p.Add(l, pts)
		legend.Add(s.label, l, pts)
	}
	if len(roof) == 0 {
		return nil
	}
	l, err := plotter.NewLine(roof)
	if err != nil {
		return fmt.Errorf("plot copy roofline: %w", err)
	}
	l.Width, l.Dashes = 1.5, []vg.Length{vg.Points(6), vg.Points(4)}
	p.Add(l)
	legend.Add("copy of the rows (roofline)", l)
	return nil
}

// padTokens leaves half a power of two of room on the tokens axis either
// side of the data: the first and last points sit on ticks inside the
// frame (not on its edge, where a mark's ring is cut), and an axis of one
// value gets a range (gonum would widen it by ±1, which can reach zero).
func padTokens(a *plot.Axis) {
	a.Min, a.Max = a.Min/math.Sqrt2, a.Max*math.Sqrt2
}
