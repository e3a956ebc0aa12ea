package measure_test

import (
	"fmt"
	"time"

	"github.com/kvharness/kvharness/harness/measure"
)

func Example() {
	// A fake clock: each launch takes 1ms of wall time.
	var now time.Time
	clock := func() time.Time { return now }

	s := measure.Criterion{}.Start(clock)
	var samples []float64
	for i := 0; !s.Done(); i++ {
		x := 1000 + float64(i%3) // nearly constant ns per launch
		now = now.Add(time.Millisecond)
		samples = append(samples, x)
		s.Add(x)
	}
	sum, _ := measure.Summarize(samples)
	fmt.Println(s.Reason())
	fmt.Printf("p50 %.0f ns, p99 %.2f ns\n", sum.P50, sum.P99)
	// Output:
	// converged: noise 0.09% ≤ 0.50% after 10 samples (10ms)
	// p50 1001 ns, p99 1002.00 ns
}
