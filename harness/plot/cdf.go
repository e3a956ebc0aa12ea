package plot

import (
	"fmt"
	"io"
	"slices"

	"github.com/kvharness/kvharness/harness/results"
	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
)

// maxCDFPoints bounds the points drawn per curve; more are not visible
// at chart resolution.
const maxCDFPoints = 1000

// logRatio is the max/min latency ratio from which the x axis is log.
const logRatio = 10

// LatencyCDF writes a PNG of the per-launch latency CDF of each cell to
// w. Every cell must carry raw samples.
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
	p.Title.Text = o.title("Per-launch latency CDF")
	p.X.Label.Text = "latency (µs)"
	p.Y.Label.Text = "fraction of launches ≤ latency"
	p.Y.Min, p.Y.Max = 0, 1
	p.Legend.Top, p.Legend.Left = false, false
	p.Add(plotter.NewGrid())
	if lo, hi := xRange(curves); lo > 0 && hi/lo >= logRatio {
		p.X.Scale, p.X.Tick.Marker = plot.LogScale{}, plot.LogTicks{Prec: -1}
	}
	if err := addCurves(p, curves, labels(cells, "")); err != nil {
		return err
	}
	return writePNG(p, w, o)
}

// cdfPoints is the empirical CDF of samples in µs: the i-th smallest of n
// at height (i+1)/n, thinned to at most maxCDFPoints points that keep
// both ends.
func cdfPoints(samples []float64) plotter.XYs {
	s := slices.Clone(samples)
	slices.Sort(s)
	n := len(s)
	k := min(n, maxCDFPoints)
	pts := make(plotter.XYs, k)
	for j := range k {
		i := j * (n - 1) / max(k-1, 1)
		pts[j].X = s[i] / 1e3
		pts[j].Y = float64(i+1) / float64(n)
	}
	return pts
}

func xRange(curves []plotter.XYs) (lo, hi float64) {
	lo, hi = curves[0][0].X, curves[0][0].X
	for _, c := range curves {
		lo = min(lo, c[0].X)
		hi = max(hi, c[len(c)-1].X)
	}
	return lo, hi
}

func addCurves(p *plot.Plot, curves []plotter.XYs, names []string) error {
	for i, xy := range curves {
		l, err := plotter.NewLine(xy)
		if err != nil {
			return fmt.Errorf("plot cell %q: %w", names[i], err)
		}
		l.Color = plotutil.Color(i)
		l.Width = 1.5
		p.Add(l)
		p.Legend.Add(names[i], l)
	}
	return nil
}
