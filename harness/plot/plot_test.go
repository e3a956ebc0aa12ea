package plot

import (
	"bytes"
	"errors"
	"image"
	"image/png"
	"math"
	"slices"
	"testing"

	"github.com/kvharness/kvharness/harness/measure"
	"github.com/kvharness/kvharness/harness/results"
	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg/draw"
)

func cell(plugin string, mode results.Mode, tokens int, gbps, copyGBps float64, samples []float64) results.Cell {
	return results.Cell{
		Identity: results.Identity{Plugin: plugin, PluginVersion: "1", Kernel: "store", Layout: "bf16",
			HeadDim: 128, PageSize: 16, Tokens: tokens, Mode: mode, Cache: results.Hot,
			Timing: results.PerLaunch, BatchSize: 1},
		Summary:  measure.Summary{N: max(len(samples), 1)},
		GBps:     gbps,
		CopyGBps: copyGBps,
		Samples:  samples,
	}
}

// ramp is n samples from lo to hi ns, with a tail of slow launches when
// tail > 0.
func ramp(n int, lo, hi, tail float64) []float64 {
	s := make([]float64, n)
	for i := range s {
		s[i] = lo + (hi-lo)*float64(i)/float64(n-1)
	}
	if tail > 0 {
		s[n-1], s[n-2] = tail, tail*0.8
	}
	return s
}

// checkPNG decodes data and checks its size and that something was drawn.
func checkPNG(t *testing.T, data []byte) {
	t.Helper()
	if len(data) < 5_000 || len(data) > 2_000_000 {
		t.Errorf("PNG is %d bytes, want 5 kB to 2 MB", len(data))
	}
	img, err := png.Decode(bytes.NewReader(data))
	if err != nil {
		t.Fatalf("not a PNG: %v", err)
	}
	if b := img.Bounds(); b.Dx() != 768 || b.Dy() != 480 {
		t.Errorf("PNG is %dx%d, want 768x480 (8x5 in at 96 dpi)", b.Dx(), b.Dy())
	}
	if n := colors(img); n < 4 {
		t.Errorf("PNG has %d colours; want axes, text and coloured series", n)
	}
}

func colors(img image.Image) int {
	seen := map[[4]uint32]bool{}
	b := img.Bounds()
	for y := b.Min.Y; y < b.Max.Y; y += 2 {
		for x := b.Min.X; x < b.Max.X; x += 2 {
			r, g, bl, a := img.At(x, y).RGBA()
			seen[[4]uint32{r, g, bl, a}] = true
		}
	}
	return len(seen)
}

func TestLatencyCDF(t *testing.T) {
	for name, cells := range map[string][]results.Cell{
		"wide (log x)": {
			cell("a", results.Graph, 4096, 0, 0, ramp(5000, 10_000, 12_000, 400_000)),
			cell("b", results.Graph, 4096, 0, 0, ramp(300, 14_000, 15_000, 0)),
		},
		"narrow (linear x)": {cell("a", results.Eager, 16, 0, 0, ramp(50, 1000, 1100, 0))},
		"constant":          {cell("a", results.Eager, 16, 0, 0, []float64{900, 900, 900})},
		"one sample":        {cell("a", results.Eager, 16, 0, 0, []float64{900}), cell("b", results.Eager, 16, 0, 0, ramp(50, 1000, 1100, 0))},
	} {
		var buf bytes.Buffer
		if err := LatencyCDF(&buf, cells, Options{Footer: "commit abc1234; device cpu; 2026-12-01 04:00 UTC"}); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		checkPNG(t, buf.Bytes())
	}
}

func TestLatencyCDFErrors(t *testing.T) {
	if err := LatencyCDF(&bytes.Buffer{}, nil, Options{}); !errors.Is(err, ErrNoCells) {
		t.Errorf("no cells: %v, want ErrNoCells", err)
	}
	cells := []results.Cell{cell("a", results.Graph, 16, 0, 0, ramp(10, 1, 2, 0)), cell("b", results.Graph, 16, 0, 0, nil)}
	var buf bytes.Buffer
	err := LatencyCDF(&buf, cells, Options{})
	var md *MissingDataError
	if !errors.As(err, &md) || md.Key != cells[1].Key() || buf.Len() != 0 {
		t.Errorf("cell without samples: %v (wrote %d bytes), want MissingDataError for %s and nothing written", err, buf.Len(), cells[1].Key())
	}
}

func TestCDFPoints(t *testing.T) {
	pts := cdfPoints([]float64{3000, 1000, 5000, 2000, 4000})
	for i, p := range pts {
		if wantX, wantY := float64(i+1), (float64(i)+0.5)/5; p.X != wantX || p.Y != wantY {
			t.Errorf("point %d = (%v, %v), want (%v µs, %v)", i, p.X, p.Y, wantX, wantY)
		}
	}
	big := cdfPoints(ramp(5000, 0, 4999, 0))
	if len(big) != maxCDFPoints || big[0].Y != 0.5/5000 || big[len(big)-1].Y != 4999.5/5000 || big[len(big)-1].X != 4.999 {
		t.Errorf("5000 samples: %d points from %v to %v; want %d points spanning both ends", len(big), big[0], big[len(big)-1], maxCDFPoints)
	}
}

func throughputCells() []results.Cell {
	var cells []results.Cell
	for _, tok := range []int{4096, 16, 256, 65536} {
		copyGB := 3000 * float64(tok) / float64(tok+256)
		cells = append(cells,
			cell("fused", results.Graph, tok, copyGB*0.8, copyGB, nil),
			cell("scatter", results.Graph, tok, copyGB*0.5, copyGB*0.99, nil))
	}
	return cells
}

func TestThroughput(t *testing.T) {
	for name, cells := range map[string][]results.Cell{
		"two series":  throughputCells(),
		"single cell": {cell("a", results.Eager, 1, 10, 0, nil)},
	} {
		var buf bytes.Buffer
		if err := Throughput(&buf, cells, Options{Title: name}); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		checkPNG(t, buf.Bytes())
	}
}

func TestThroughputErrors(t *testing.T) {
	if err := Throughput(&bytes.Buffer{}, nil, Options{}); !errors.Is(err, ErrNoCells) {
		t.Errorf("no cells: %v, want ErrNoCells", err)
	}
	var md *MissingDataError
	if err := Throughput(&bytes.Buffer{}, []results.Cell{cell("a", results.Graph, 16, 0, 0, nil)}, Options{}); !errors.As(err, &md) {
		t.Errorf("cell without GB/s: %v, want MissingDataError", err)
	}
}

func TestGroupSeries(t *testing.T) {
	ss := groupSeries(throughputCells())
	if len(ss) != 2 || ss[0].label != "plugin=fused" || ss[1].label != "plugin=scatter" {
		t.Fatalf("series = %+v, want fused then scatter", ss)
	}
	var xs []float64
	for _, p := range ss[0].pts {
		xs = append(xs, p.X)
	}
	if !slices.Equal(xs, []float64{16, 256, 4096, 65536}) {
		t.Errorf("fused tokens = %v, want sorted 16..65536", xs)
	}
	roof := rooflinePoints(throughputCells())
	if len(roof) != 4 || roof[0].X != 16 || roof[0].Y != 3000*16.0/272 {
		t.Errorf("roofline = %v, want the best copy at each of 4 sizes", roof)
	}
}

func TestLabels(t *testing.T) {
	one := labels([]results.Cell{cell("a", results.Graph, 16, 1, 0, nil)}, "")
	if one[0] != "plugin=a layout=bf16 mode=graph" {
		t.Errorf("single-cell label %q", one[0])
	}
	same := labels([]results.Cell{cell("a", results.Graph, 16, 1, 0, nil), cell("a", results.Graph, 16, 1, 0, nil)}, "")
	if !slices.Equal(same, []string{"plugin=a layout=bf16 mode=graph", "plugin=a layout=bf16 mode=graph #2"}) {
		t.Errorf("labels of one cell from two runs = %q, want them numbered", same)
	}
	two := labels([]results.Cell{cell("a", results.Graph, 16, 1, 0, nil), cell("a", results.Eager, 32, 1, 0, nil)}, "tokens")
	if !slices.Equal(two, []string{"mode=graph", "mode=eager"}) {
		t.Errorf("labels = %q, want only the differing mode (tokens skipped)", two)
	}
}

func TestPow2Ticks(t *testing.T) {
	var labelled []string
	for _, tk := range (pow2Ticks{}).Ticks(10, 70_000) {
		if tk.Label != "" {
			labelled = append(labelled, tk.Label)
		}
	}
	if want := []string{"16", "64", "256", "1K", "4K", "16K", "64K"}; !slices.Equal(labelled, want) {
		t.Errorf("labelled ticks %q, want %q", labelled, want)
	}
}

// TestNinesScale: p90, p99, p99.9 and p99.99 are equally far apart.
func TestNinesScale(t *testing.T) {
	n := ninesScale{}
	var ys []float64
	for _, f := range []float64{0.9, 0.99, 0.999, 0.9999} {
		ys = append(ys, n.Normalize(0, 0.9999, f))
	}
	for i := 2; i < len(ys); i++ {
		if d1, d2 := ys[i]-ys[i-1], ys[i-1]-ys[i-2]; d1 < d2*0.999 || d1 > d2*1.001 {
			t.Errorf("nines at %v: steps %v and %v differ", ys, d2, d1)
		}
	}
	if n.Normalize(0, 0.9999, 0) != 0 || n.Normalize(0, 0.9999, 0.9999) != 1 {
		t.Error("the nines scale does not span its axis")
	}
}

func TestLogTicks(t *testing.T) {
	var labelled []string
	for _, tk := range (logTicks{}).Ticks(0.2, 60) {
		if tk.Label != "" {
			labelled = append(labelled, tk.Label)
		}
	}
	if want := []string{"0.2", "0.5", "1", "2", "5", "10", "20", "50"}; !slices.Equal(labelled, want) {
		t.Errorf("labelled ticks %q, want %q", labelled, want)
	}
	for v, want := range map[float64]string{10000: "10000", 2 * math.Pow(10, -2): "0.02", 5: "5"} {
		if got := tickLabel(v); got != want {
			t.Errorf("tickLabel(%v) = %q, want %q", v, got, want)
		}
	}
	if lo, hi := logRange(0.23, 37); lo != 0.2 || hi != 50 {
		t.Errorf("logRange(0.23, 37) = %v, %v; want 0.2, 50", lo, hi)
	}
}

func TestOverlay(t *testing.T) {
	var pairs []Pair
	for i, tok := range []int{1, 32, 512, 4096} {
		pairs = append(pairs,
			Pair{Series: "plugin=a timing=batched", Tokens: tok, Base: 1000 * float64(tok), New: 1000 * float64(tok) * 1.02},
			Pair{Series: "plugin=b timing=batched", Tokens: tok, Base: 500 * float64(tok+1), New: 1000 * float64(tok+1), Mark: Mark(1 + i%3)})
	}
	pairs = append(pairs, Pair{Series: "plugin=c", Tokens: 64, Base: 900}) // gone from the new night
	var buf bytes.Buffer
	if err := Overlay(&buf, pairs, "base.txt (abc1234)", "night (def5678)", Options{Footer: "bf16"}); err != nil {
		t.Fatal(err)
	}
	checkPNG(t, buf.Bytes())
	for i := range pairs {
		pairs[i].Mark = Same
	}
	var unmarked bytes.Buffer
	if err := Overlay(&unmarked, pairs, "base.txt (abc1234)", "night (def5678)", Options{Footer: "bf16"}); err != nil {
		t.Fatal(err)
	}
	if marked, plain := reds(t, buf.Bytes()), reds(t, unmarked.Bytes()); marked < plain+50 {
		t.Errorf("%d red pixels with slower cells marked, %d without: no rings drawn", marked, plain)
	}
	if err := Overlay(&bytes.Buffer{}, nil, "a", "b", Options{}); !errors.Is(err, ErrNoCells) {
		t.Errorf("no pairs: %v, want ErrNoCells", err)
	}
}

// reds counts the PNG's pixels close to the slower mark's red.
func reds(t *testing.T, data []byte) int {
	t.Helper()
	img, err := png.Decode(bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	b := img.Bounds()
	for y := b.Min.Y; y < b.Max.Y; y++ {
		for x := b.Min.X; x < b.Max.X; x++ {
			r, g, bl, _ := img.At(x, y).RGBA()
			if near8(r, red.R) && near8(g, red.G) && near8(bl, red.B) {
				n++
			}
		}
	}
	return n
}

func near8(v uint32, want uint8) bool { d := int(v>>8) - int(want); return d > -30 && d < 30 }

// TestMarksStayVisible: two series slower at the same size, their points
// almost on each other, get rings of two sizes and labels on two lines;
// each label is the change in percent; the tokens axis leaves room for a
// ring past the last point, and its last tick, labelled, is that point.
func TestMarksStayVisible(t *testing.T) {
	pairs := []Pair{
		{Series: "a", Tokens: 512, Base: 1000, New: 1250, Mark: Slower},
		{Series: "b", Tokens: 512, Base: 1000, New: 1300, Mark: Slower},
		{Series: "a", Tokens: 32, Base: 1000, New: 800, Mark: Faster},
		{Series: "a", Tokens: 1, Base: 1000, New: 1000, Mark: Same},
	}
	got := placeMarks(pairs)
	if len(got) != 3 || got[0].Tokens != 32 || got[1].stack != 0 || got[2].stack != 1 {
		t.Fatalf("placed %+v; want the faster mark, then the two slower ones at 512 stacked 0 and 1", got)
	}
	for _, tc := range []struct {
		pr   Pair
		want string
	}{{pairs[0], "+25%"}, {pairs[2], "-20%"}} {
		l := changeLabel(plotter.XYs{{X: 1, Y: 1}}, tc.pr, draw.GlyphStyle{Radius: 7}, 0)
		if l == nil || l.Labels[0] != tc.want {
			t.Errorf("label of %+v: %v, want %q", tc.pr, l, tc.want)
		}
	}
	var a plot.Axis
	a.Min, a.Max = 1, 512
	padTokens(&a)
	ticks := pow2Ticks{}.Ticks(a.Min, a.Max)
	last := ticks[len(ticks)-1]
	if a.Max <= 512 || last.Value != 512 || last.Label != "512" {
		t.Errorf("axis to %g, last tick %+v; want room past 512 and a labelled tick at 512", a.Max, last)
	}
	var buf bytes.Buffer
	if err := Overlay(&buf, pairs, "base", "new", Options{}); err != nil {
		t.Fatal(err)
	}
	checkPNG(t, buf.Bytes())
}
