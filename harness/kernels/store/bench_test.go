package store

import (
	"context"
	"math/rand"
	"testing"
)

// BenchmarkCheckedCases measures whole checked store cases against a real
// plugin process: three runs per case (as given, again, unpadded), each a
// gRPC call plus a scan and classification of the pool. Capacity ≤ 64 and
// a 4096-slot pool, the reference shape.
func BenchmarkCheckedCases(b *testing.B) {
	for _, l := range []string{"bf16", "fp8-paged"} {
		b.Run("layout="+l, func(b *testing.B) {
			checkCases(b, openTarget(b, "fusedstore", l, ""), 64)
		})
	}
}

// checkCases checks cases of capacity ≤ maxCapacity, drawn round the
// paddings, as fast as the target takes them, and reports cases/s.
func checkCases(b *testing.B, tg *Target, maxCapacity int) {
	cases := drawCases(tg, maxCapacity)
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		res, err := tg.Check(context.Background(), cases[i%len(cases)])
		if err != nil || res.Failed() {
			b.Fatalf("case %v: %v %v", cases[i%len(cases)], err, res)
		}
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "cases/s")
}

// drawCases draws 1024 cases of capacity ≤ maxCapacity for tg's pools,
// round the paddings.
func drawCases(tg *Target, maxCapacity int) []*Case {
	gens := make([]*Gen, len(Paddings))
	for i, p := range Paddings {
		gens[i] = &Gen{Slots: tg.Slots, PageSize: 64, Padding: p, MaxCapacity: maxCapacity}
	}
	rng := rand.New(rand.NewSource(1))
	cases := make([]*Case, 1024)
	for i := range cases {
		cases[i] = gens[i%len(gens)].Draw(rng)
	}
	return cases
}
