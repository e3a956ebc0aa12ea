package measure

import "math"

// running accumulates count, sum, mean and variance in one pass
// (Welford's method), so a Stopper costs O(1) per sample.
type running struct {
	n        int
	sum      float64
	mean, m2 float64
}

func (r *running) add(x float64) {
	r.n++
	r.sum += x
	d := x - r.mean
	r.mean += d / float64(r.n)
	r.m2 += d * (x - r.mean)
}

// noise is the relative sample standard deviation; 0 below two samples.
func (r *running) noise() float64 {
	if r.n < 2 {
		return 0
	}
	return relative(math.Sqrt(r.m2/float64(r.n-1)), r.mean)
}
