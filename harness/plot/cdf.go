package plot

import (
	"fmt"
	"io"
	"slices"

	"github.com/kvharness/kvharness/harness/results"
	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"
)

// maxCDFPoints bounds the points drawn per curve; more are not visible
// at chart resolution.
const maxCDFPoints = 1000

// logRatio is the max/min latency ratio from which the x axis is log.
const logRatio = 4

// markBelow: a curve of fewer samples is drawn with a mark at each, so
// that a cell of one sample is a dot rather than nothing.
const markBelow = 30

// LatencyCDF writes a PNG of the per-launch latency distribution of each
// cell to w: latency on x (log when it spans a factor of four or more),
// the fraction of launches at or below it on a nines scale on y, so that
// p50, p90, p99 and p99.9 are equally far apart. Every cell must carry
// raw samples.
func LatencyCDF(w io.Writer, cells []results.Cell, o Options) error {
	if len(cells) == 0 {
		return ErrNoCells
	}
	curves := make([]plotter.XYs, len(cells))
	for i, c := range cells {
		if len(c.Samples) == 0 {
			return &MissingDataError{c.Key(), "no raw samples for a CDF (keep samples when running bench)"}
		}
		curves[i] = cdfPoints(c.Samples)
	}
	p := plot.New()
	p.Title.Text = o.title("Per-launch latency")
	p.X.Label.Text = "latency (µs)"
	p.Y.Label.Text = "launches at or below it"
	p.Y.Scale, p.Y.Tick.Marker = ninesScale{}, ninesTicks{}
	p.Y.Min, p.Y.Max = 0, topFraction(curves)
	p.Add(plotter.NewGrid())
	if lo, hi := xRange(curves); lo > 0 && hi/lo >= logRatio {
		p.X.Min, p.X.Max = logRange(lo, hi)
		p.X.Scale, p.X.Tick.Marker = plot.LogScale{}, logTicks{}
	}
	legend := newLegend()
	if err := addCurves(p, &legend, curves, labels(cells, ""), cells); err != nil {
		return err
	}
	return render(p, legend, w, o)
}

// cdfPoints is the empirical CDF of samples in µs at Hazen's plotting
// positions: the i-th smallest of n at (i+½)/n, below 1 so that the
// nines scale can draw it; thinned to at most maxCDFPoints points that
// keep both ends.
func cdfPoints(samples []float64) plotter.XYs {
	s := slices.Clone(samples)
	slices.Sort(s)
	n := len(s)
	k := min(n, maxCDFPoints)
	pts := make(plotter.XYs, k)
	for j := range k {
		i := j * (n - 1) / max(k-1, 1)
		pts[j].X = s[i] / 1e3
		pts[j].Y = (float64(i) + 0.5) / float64(n)
	}
	return pts
}

// topFraction is the y axis's top: the highest plotting position of any
// curve, at least p99.
func topFraction(curves []plotter.XYs) float64 {
	top := 0.99
	for _, c := range curves {
		top = max(top, c[len(c)-1].Y)
	}
	return top
}

func xRange(curves []plotter.XYs) (lo, hi float64) {
	lo, hi = curves[0][0].X, curves[0][0].X
	for _, c := range curves {
		lo = min(lo, c[0].X)
		hi = max(hi, c[len(c)-1].X)
	}
	return lo, hi
}

func addCurves(p *plot.Plot, legend *plot.Legend, curves []plotter.XYs, names []string, cells []results.Cell) error {
	for i, xy := range curves {
		name := fmt.Sprintf("%s (%d samples)", names[i], len(cells[i].Samples))
		var thumbs []plot.Thumbnailer
		if len(xy) > 1 {
			l, err := plotter.NewLine(xy)
			if err != nil {
				return fmt.Errorf("plot cell %q: %w", names[i], err)
			}
			l.Color, l.Width = plotutil.Color(i), 1.5
			p.Add(l)
			thumbs = append(thumbs, l)
		}
		if len(cells[i].Samples) < markBelow {
			s, err := plotter.NewScatter(xy)
			if err != nil {
				return fmt.Errorf("plot cell %q: %w", names[i], err)
			}
			s.Color, s.Radius, s.Shape = plotutil.Color(i), vg.Points(3), plotutil.Shape(i)
			p.Add(s)
			thumbs = append(thumbs, s)
		}
		legend.Add(name, thumbs...)
	}
	return nil
}
