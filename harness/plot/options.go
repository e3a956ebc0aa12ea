package plot

import (
	"fmt"
	"io"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/vg"
)

// Default chart size: 8×5 inches, 768×480 pixels in the PNG.
const (
	DefaultWidth  = 8 * vg.Inch
	DefaultHeight = 5 * vg.Inch
)

// Options configures a chart. The zero value uses a default title and
// size.
type Options struct {
	Title         string
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

// writePNG renders p as a PNG to w.
func writePNG(p *plot.Plot, w io.Writer, o Options) error {
	width, height := o.size()
	wt, err := p.WriterTo(width, height, "png")
	if err != nil {
		return fmt.Errorf("render png: %w", err)
	}
	if _, err := wt.WriteTo(w); err != nil {
		return fmt.Errorf("write png: %w", err)
	}
	return nil
}
