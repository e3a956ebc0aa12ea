package plot

import (
	"fmt"
	"io"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/font"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/text"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// Default chart size: 8×5 inches, 768×480 pixels in the PNG.
const (
	DefaultWidth  = 8 * vg.Inch
	DefaultHeight = 5 * vg.Inch
)

// Options configures a chart. The zero value uses a default title and
// size.
type Options struct {
	Title string
	// Footer names what the chart shows, drawn under it: the commit,
	// device and date of the night (kvharness writes them on every chart,
	// so a chart passed around on its own still says where it is from).
	Footer        string
	Width, Height vg.Length
}

func (o Options) size() (vg.Length, vg.Length) {
	w, h := o.Width, o.Height
	if w <= 0 {
		w = DefaultWidth
	}
	if h <= 0 {
		h = DefaultHeight
	}
	return w, h
}

func (o Options) title(def string) string {
	if o.Title != "" {
		return o.Title
	}
	return def
}

// newTokensPlot starts a plot of yLabel against tokens, both axes log
// (tokens ticked at powers of two), over a grid.
func newTokensPlot(title, yLabel string) *plot.Plot {
	p := plot.New()
	p.Title.Text = title
	p.X.Label.Text = "tokens"
	p.Y.Label.Text = yLabel
	p.X.Scale, p.X.Tick.Marker = plot.LogScale{}, pow2Ticks{}
	p.Y.Scale, p.Y.Tick.Marker = plot.LogScale{}, logTicks{}
	p.Add(plotter.NewGrid())
	return p
}

// legendShare is the most of the chart's width a legend beside the data
// may take; a wider one goes under the data.
const legendShare = 0.38

// render draws p with its legend outside the data (beside it, or under it
// when its labels are long) and the footer at the bottom, as a PNG to w.
func render(p *plot.Plot, legend plot.Legend, w io.Writer, o Options) error {
	width, height := o.size()
	cw, err := draw.NewFormattedCanvas(width, height, "png")
	if err != nil {
		return fmt.Errorf("render png: %w", err)
	}
	dc := draw.New(cw)
	foot := footerStyle()
	footH := vg.Length(0)
	if o.Footer != "" {
		footH = foot.Height(o.Footer) + vg.Points(6)
		dc.FillText(foot, vg.Point{X: dc.Min.X + vg.Points(6), Y: dc.Min.Y + vg.Points(3)}, o.Footer)
	}
	body := draw.Crop(dc, 0, 0, footH, 0)
	lr := legend.Rectangle(body).Size()
	switch {
	case lr.X == 0:
		p.Draw(body)
	case lr.X <= legendShare*width:
		pad := vg.Points(10)
		p.Draw(draw.Crop(body, 0, -lr.X-2*pad, 0, 0))
		legend.Draw(draw.Crop(body, width-lr.X-pad, -pad, 0, -pad-vg.Points(24)))
	default:
		p.Draw(draw.Crop(body, 0, 0, lr.Y+vg.Points(8), 0))
		legend.Draw(draw.Crop(body, vg.Points(40), 0, vg.Points(2), -(body.Max.Y-body.Min.Y)+lr.Y+vg.Points(4)))
	}
	if _, err := cw.WriteTo(w); err != nil {
		return fmt.Errorf("write png: %w", err)
	}
	return nil
}

func newLegend() plot.Legend {
	l := plot.NewLegend()
	l.Top, l.Left = true, true
	l.TextStyle.Font.Size = vg.Points(10)
	l.Padding = vg.Points(2)
	return l
}

func footerStyle() text.Style {
	return text.Style{Font: font.From(plot.DefaultFont, 9), Handler: plot.DefaultTextHandler}
}
