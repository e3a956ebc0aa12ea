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
//
// fusedstore's bytes are the reference encoding, which passes without
// judgement; recipestore's torch variant is 1 ulp off on many rows, so
// those rows are judged (layout.Judge), as are DeepSeek-V4 rows whose pad
// byte the shipped kernel leaves as it was.
func BenchmarkCheckedCases(b *testing.B) {
	for _, tc := range []struct{ plugin, variant, layout string }{
		{"fusedstore", "", "bf16"}, {"fusedstore", "", "fp8-paged"},
		{"recipestore", "torch", "fp8-paged"}, {"recipestore", "", "dsv4-main"},
	} {
		name := "layout=" + tc.layout
		if tc.plugin != "fusedstore" {
			name += "/plugin=" + tc.plugin
			if tc.variant != "" {
				name += "-" + tc.variant
			}
		}
		b.Run(name, func(b *testing.B) {
			checkCases(b, openTarget(b, tc.plugin, tc.layout, tc.variant), 64)
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

// BenchmarkOracleCheck times the oracle alone on one case of 64 valid rows
// in a 256-slot pool: the bytes of the reference encoding (compared, not
// judged), of PyTorch's arithmetic (every row that is not bit-exact
// judged), and DeepSeek-V4 rows whose pad byte kept the background
// (compared on the bytes the layout cares about).
func BenchmarkOracleCheck(b *testing.B) {
	loc := make([]int64, 64)
	for i := range loc {
		loc[i] = int64(3 * i)
	}
	for _, tc := range []struct {
		name, layout string
		store        func(f *fixture, i int, slot int64)
	}{
		{"fp8-paged/reference", "fp8-paged", func(f *fixture, i int, slot int64) { f.store(i, slot) }},
		{"fp8-paged/torch", "fp8-paged", func(f *fixture, i int, slot int64) { f.storeWith(i, slot, torchScale) }},
		{"dsv4-main/pad-untouched", "dsv4-main", func(f *fixture, i int, slot int64) {
			pad := f.l.Footprint(slot)[1].Off + 7
			keep := f.mem[pad+f.region.GuardBefore.Len]
			f.store(i, slot)
			f.put(pad, []byte{keep})
		}},
	} {
		b.Run(tc.name, func(b *testing.B) {
			f := newFixture(b, tc.layout, oracleCase(PadNone, len(loc), loc...))
			for i, slot := range loc {
				tc.store(f, i, slot)
			}
			d := f.delta()
			for b.Loop() {
				if vs := f.sc.Check(d); len(vs) > 0 {
					b.Fatal(vs)
				}
			}
		})
	}
}
