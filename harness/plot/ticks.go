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

func (pow2Ticks) Ticks(lo, hi float64) []plot.Tick {
	first, last := int(math.Ceil(math.Log2(lo))), int(math.Floor(math.Log2(hi)))
	step := max(1, (last-first+8)/8)
	var ticks []plot.Tick
	for e := first; e <= last; e++ {
		t := plot.Tick{Value: math.Exp2(float64(e))}
		if (e-first)%step == 0 {
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
