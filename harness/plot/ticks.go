package plot

import (
	"math"
	"strconv"

	"gonum.org/v1/plot"
)

// pow2Ticks marks powers of two on a log axis, labelling at most about
// eight of them. Labels use K = 1024 and M = 1024², as token counts do.
type pow2Ticks struct{}

var _ plot.Ticker = pow2Ticks{}

// The labels count back from the last tick, so the largest size measured
// (the axis's end, the last point) is always labelled.
func (pow2Ticks) Ticks(lo, hi float64) []plot.Tick {
	first, last := int(math.Ceil(math.Log2(lo)-1e-9)), int(math.Floor(math.Log2(hi)+1e-9))
	step := max(1, (last-first+8)/8)
	var ticks []plot.Tick
	for e := first; e <= last; e++ {
		t := plot.Tick{Value: math.Exp2(float64(e))}
		if (last-e)%step == 0 {
			t.Label = pow2Label(e)
		}
		ticks = append(ticks, t)
	}
	return ticks
}

func pow2Label(e int) string {
	switch {
	case e >= 20:
		return strconv.Itoa(1<<(e-20)) + "M"
	case e >= 10:
		return strconv.Itoa(1<<(e-10)) + "K"
	case e >= 0:
		return strconv.Itoa(1 << e)
	}
	return strconv.FormatFloat(math.Exp2(float64(e)), 'g', -1, 64)
}

// logTicks marks 1, 2 and 5 of each decade on a log axis, labelled, and
// the other digits unlabelled, so a range inside one decade still reads.
type logTicks struct{}

var _ plot.Ticker = logTicks{}

func (logTicks) Ticks(lo, hi float64) []plot.Tick {
	var ticks []plot.Tick
	for e := math.Floor(math.Log10(lo)); e <= math.Ceil(math.Log10(hi)); e++ {
		for d := 1.0; d < 10; d++ {
			v := d * math.Pow(10, e)
			if v < lo*(1-1e-9) || v > hi*(1+1e-9) {
				continue
			}
			t := plot.Tick{Value: v}
			if d == 1 || d == 2 || d == 5 {
				t.Label = tickLabel(v)
			}
			ticks = append(ticks, t)
		}
	}
	return ticks
}

// logRange widens [lo, hi] to whole 1-2-5 steps, so a log axis starts and
// ends on a labelled tick.
func logRange(lo, hi float64) (float64, float64) {
	down := func(v float64) float64 {
		e := math.Pow(10, math.Floor(math.Log10(v)))
		for _, d := range []float64{5, 2, 1} {
			if d*e <= v*(1+1e-9) {
				return d * e
			}
		}
		return e
	}
	up := func(v float64) float64 {
		e := math.Pow(10, math.Floor(math.Log10(v)))
		for _, d := range []float64{1, 2, 5, 10} {
			if d*e >= v*(1-1e-9) {
				return d * e
			}
		}
		return 10 * e
	}
	return down(lo), up(hi)
}

// ninesScale maps a cumulative fraction F to -log10(1-F): the median,
// p90, p99 and p99.9 sit a step apart, so a tail is as tall as the body
// of the distribution instead of one pixel at the top.
type ninesScale struct{}

var _ plot.Normalizer = ninesScale{}

func nines(f float64) float64 { return -math.Log10(1 - f) }

func (ninesScale) Normalize(lo, hi, x float64) float64 {
	a, b := nines(lo), nines(hi)
	return (nines(x) - a) / (b - a)
}

// ninesTicks labels the percentiles a latency report names.
type ninesTicks struct{}

var _ plot.Ticker = ninesTicks{}

func (ninesTicks) Ticks(lo, hi float64) []plot.Tick {
	var ticks []plot.Tick
	for _, t := range []struct {
		f     float64
		label string
	}{{0, "0"}, {0.5, "p50"}, {0.9, "p90"}, {0.99, "p99"}, {0.999, "p99.9"}, {0.9999, "p99.99"}, {0.99999, "p99.999"}} {
		if t.f >= lo && t.f <= hi {
			ticks = append(ticks, plot.Tick{Value: t.f, Label: t.label})
		}
	}
	return ticks
}

// tickLabel writes a 1-2-5 tick plainly: 10000, 0.02 (never 1e+04).
func tickLabel(v float64) string {
	if v >= 1 {
		return strconv.FormatFloat(math.Round(v), 'f', -1, 64)
	}
	return strconv.FormatFloat(v, 'g', 3, 64)
}
