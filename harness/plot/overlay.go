package plot

import (
	"cmp"
	"fmt"
	"image/color"
	"io"
	"math"
	"slices"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// A Mark is what a comparison said of a point.
type Mark int

// Marks of an overlay's points.
const (
	Same   Mark = iota // no mark
	Slower             // a red ring
	Faster             // a green ring
	Unsure             // a grey square
)

// A Pair is one cell of two nights: its series (every name field but
// tokens), tokens, the base and new nights' times in ns, and the verdict.
type Pair struct {
	Series    string
	Tokens    int
	Base, New float64
	Mark      Mark
}

// Overlay writes a PNG of two nights' times against tokens to w, both
// axes log: each series in one colour, the base night dashed with open
// marks, the new night solid with filled ones, and each cell the
// comparison judged slower ringed in red (faster in green, unsure in a
// grey square). A point one night lacks is not drawn for that night.
func Overlay(w io.Writer, pairs []Pair, baseName, newName string, o Options) error {
	if len(pairs) == 0 {
		return ErrNoCells
	}
	p := newTokensPlot(o.title("Two nights"), "time per launch (µs, median)")
	legend := newLegend()
	lo, hi, err := addPairs(p, &legend, pairs)
	if err != nil {
		return err
	}
	p.Y.Min, p.Y.Max = logRange(lo/markRoom, hi*markRoom)
	addKey(p, &legend, baseName, newName)
	padTokens(&p.X)
	return render(p, legend, w, o)
}

func addPairs(p *plot.Plot, legend *plot.Legend, pairs []Pair) (lo, hi float64, err error) {
	var names []string
	bySeries := map[string][]Pair{}
	for _, pr := range pairs {
		if _, ok := bySeries[pr.Series]; !ok {
			names = append(names, pr.Series)
		}
		bySeries[pr.Series] = append(bySeries[pr.Series], pr)
	}
	lo, hi = -1, 0
	for i, name := range names {
		ps := bySeries[name]
		slices.SortFunc(ps, func(a, b Pair) int { return cmp.Compare(a.Tokens, b.Tokens) })
		base, next := points(ps, func(pr Pair) float64 { return pr.Base }), points(ps, func(pr Pair) float64 { return pr.New })
		for _, pt := range append(base, next...) {
			if lo < 0 || pt.Y < lo {
				lo = pt.Y
			}
			hi = max(hi, pt.Y)
		}
		if _, err := addNight(p, base, i, true); err != nil {
			return 0, 0, fmt.Errorf("plot series %q: %w", name, err)
		}
		l, err := addNight(p, next, i, false)
		if err != nil {
			return 0, 0, fmt.Errorf("plot series %q: %w", name, err)
		}
		if l != nil {
			legend.Add(name, l)
		}
	}
	addMarks(p, pairs)
	if lo <= 0 {
		return 0, 0, fmt.Errorf("no positive times to plot")
	}
	return lo, hi, nil
}

func points(ps []Pair, v func(Pair) float64) plotter.XYs {
	var out plotter.XYs
	for _, pr := range ps {
		if y := v(pr); y > 0 {
			out = append(out, plotter.XY{X: float64(pr.Tokens), Y: y / 1e3})
		}
	}
	return out
}

// addNight draws one night of a series; it returns its line, for the
// legend.
func addNight(p *plot.Plot, pts plotter.XYs, i int, base bool) (*plotter.Line, error) {
	if len(pts) == 0 {
		return nil, nil
	}
	l, sc, err := plotter.NewLinePoints(pts)
	if err != nil {
		return nil, err
	}
	l.Color, sc.Color, l.Width = plotutil.Color(i), plotutil.Color(i), 1.5
	sc.Shape = draw.CircleGlyph{}
	if base {
		l.Dashes, l.Width = []vg.Length{vg.Points(5), vg.Points(3)}, 1
		sc.Shape = draw.RingGlyph{}
	}
	p.Add(l, sc)
	return l, nil
}

var (
	red   = color.RGBA{R: 220, G: 20, B: 20, A: 255}
	green = color.RGBA{R: 20, G: 160, B: 40, A: 255}
	grey  = color.RGBA{R: 120, G: 120, B: 120, A: 255}
)

// markStyle is the glyph of a mark, r its radius.
func markStyle(m Mark, r vg.Length) (draw.GlyphStyle, bool) {
	switch m {
	case Slower:
		return draw.GlyphStyle{Color: red, Radius: r, Shape: thickRing{}}, true
	case Faster:
		return draw.GlyphStyle{Color: green, Radius: r, Shape: thickRing{}}, true
	case Unsure:
		return draw.GlyphStyle{Color: grey, Radius: r * 0.8, Shape: draw.BoxGlyph{}}, true
	}
	return draw.GlyphStyle{}, false
}

// thickRing is a ring drawn 2 points wide: visible over the lines it
// marks.
type thickRing struct{}

func (thickRing) DrawGlyph(c *draw.Canvas, sty draw.GlyphStyle, pt vg.Point) {
	c.SetLineStyle(draw.LineStyle{Color: sty.Color, Width: vg.Points(2)})
	var p vg.Path
	p.Move(vg.Point{X: pt.X + sty.Radius, Y: pt.Y})
	p.Arc(pt, sty.Radius, 0, 2*math.Pi)
	p.Close()
	c.Stroke(p)
}

// markRoom is how much room, as a factor on a log axis, the data leaves
// at either end for a mark's ring and its label.
const markRoom = 1.25

// addMarks rings the new night's point of each judged cell and writes the
// change beside it (+12%). Marks whose points nearly coincide (two series
// slower at one size) get rings of growing size and labels one under the
// other, so each stays visible.
func addMarks(p *plot.Plot, pairs []Pair) {
	for _, m := range placeMarks(pairs) {
		pr, stack := m.Pair, m.stack
		sty, _ := markStyle(pr.Mark, vg.Points(7+4*float64(stack)))
		pt := plotter.XYs{{X: float64(pr.Tokens), Y: pr.New / 1e3}}
		sc, err := plotter.NewScatter(pt)
		if err != nil {
			continue // one finite point always makes a scatter
		}
		sc.GlyphStyle = sty
		p.Add(sc)
		if l := changeLabel(pt, pr, sty, stack); l != nil {
			p.Add(l)
		}
	}
}

// placed is a mark and how many marks before it its point nearly
// coincides with.
type placed struct {
	Pair
	stack int
}

// placeMarks are the pairs that carry a mark, by tokens and time, each
// with its stack: the marks before it at the same tokens within 30% of
// its time, whose rings and labels it must not hide.
func placeMarks(pairs []Pair) []placed {
	var marked []Pair
	for _, pr := range pairs {
		if _, ok := markStyle(pr.Mark, 1); ok && pr.New > 0 {
			marked = append(marked, pr)
		}
	}
	slices.SortStableFunc(marked, func(a, b Pair) int {
		return cmp.Or(cmp.Compare(a.Tokens, b.Tokens), cmp.Compare(a.New, b.New))
	})
	out := make([]placed, len(marked))
	for i, pr := range marked {
		out[i].Pair = pr
		for j := i - 1; j >= 0 && marked[j].Tokens == pr.Tokens && pr.New/marked[j].New < 1.3; j-- {
			out[i].stack++
		}
	}
	return out
}

// changeLabel is a mark's change in percent, written right of its ring
// (and one line lower per mark stacked on the same point); nil when the
// base night has no time.
func changeLabel(pt plotter.XYs, pr Pair, sty draw.GlyphStyle, stack int) *plotter.Labels {
	if pr.Base <= 0 {
		return nil
	}
	l, err := plotter.NewLabels(plotter.XYLabels{XYs: pt, Labels: []string{fmt.Sprintf("%+.0f%%", (pr.New/pr.Base-1)*100)}})
	if err != nil {
		return nil
	}
	for i := range l.TextStyle {
		l.TextStyle[i].Color = sty.Color
		l.TextStyle[i].YAlign = draw.YCenter
	}
	l.Offset = vg.Point{X: sty.Radius + vg.Points(2), Y: -vg.Points(11) * vg.Length(stack)}
	return l
}

// addKey explains the line styles and marks in the legend.
func addKey(p *plot.Plot, legend *plot.Legend, baseName, newName string) {
	dashed := &plotter.Line{LineStyle: draw.LineStyle{Color: grey, Width: 1, Dashes: []vg.Length{vg.Points(5), vg.Points(3)}}}
	solid := &plotter.Line{LineStyle: draw.LineStyle{Color: grey, Width: 1.5}}
	legend.Add("base: "+baseName, dashed)
	legend.Add("new: "+newName, solid)
	for _, m := range []struct {
		mark Mark
		text string
	}{{Slower, "slower"}, {Faster, "faster"}, {Unsure, "unsure"}} {
		sty, _ := markStyle(m.mark, vg.Points(4))
		legend.Add(m.text, &plotter.Scatter{GlyphStyle: sty})
	}
}
