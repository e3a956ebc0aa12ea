package store

import (
	"context"
	"fmt"
	"math/rand"
	"testing"

	"github.com/kvharness/kvharness/harness/fuzzing"
	"github.com/kvharness/kvharness/harness/fuzzing/remote"
	"github.com/kvharness/kvharness/harness/layout"
	"github.com/kvharness/kvharness/plugins"
)

// BenchmarkCheckedCases measures whole checked store cases against a real
// plugin process, as a property run checks them (System: drawn, checked
// ahead, proved): three runs per case (as given, again, unpadded), a
// quarter of the cases under each padding. Capacity ≤ 64 and a 4096-slot
// pool, the reference shape. It reports where the harness's time went,
// per stage and case.
//
// fusedstore's bytes are the reference encoding, which passes without
// judgement; recipestore's torch variant is 1 ulp off on many rows, so
// those rows are judged (layout.Judge), as are DeepSeek-V4 rows whose pad
// byte the shipped kernel leaves as it was. vllm-flash is the engines'
// everyday cache: 8 heads of K and V, two regions.
func BenchmarkCheckedCases(b *testing.B) {
	for _, tc := range []struct{ plugin, variant, layout string }{
		{"fusedstore", "", "bf16"}, {"fusedstore", "", "fp8-paged"},
		{"recipestore", "torch", "fp8-paged"}, {"recipestore", "", "dsv4-main"},
		{"fusedstore", "", "vllm-flash"}, // K and V of 8 heads × 128 bf16: 16 times bf16's bytes a row
	} {
		name := "layout=" + tc.layout
		if tc.plugin != "fusedstore" {
			name += "/plugin=" + tc.plugin
			if tc.variant != "" {
				name += "-" + tc.variant
			}
		}
		b.Run(name, func(b *testing.B) {
			tg := openAheadTarget(b, tc.plugin, tc.layout, tc.variant)
			tg.Phases = Phases{}
			runCases(b, tg, 64)
			reportPhases(b, tg.Phases)
		})
	}
}

// BenchmarkCheckedCasesSlots is BenchmarkCheckedCases on larger pools:
// what the default pool size costs; the last reaches past 4 GiB of byte
// offsets, checked in windows (reach.go), as a default check's pools do.
func BenchmarkCheckedCasesSlots(b *testing.B) {
	bf16, _ := layout.Builtin("bf16", 0, 64)
	for _, slots := range []int{1 << 17, 1 << 20, FarSlots(bf16)} {
		b.Run(fmt.Sprintf("layout=bf16/slots=%d", slots), func(b *testing.B) {
			tg := openTargetSets(b, "fusedstore", "bf16", "", slots, true)
			tg.Phases = Phases{}
			runCases(b, tg, 64)
			reportPhases(b, tg.Phases)
		})
	}
}

// BenchmarkCheckedCasesExact is BenchmarkCheckedCases with every case
// checked exactly, one round trip and three full scans each: what a
// shrink step or a confirmation costs.
func BenchmarkCheckedCasesExact(b *testing.B) {
	for _, l := range []string{"bf16", "fp8-paged"} {
		b.Run("layout="+l, func(b *testing.B) {
			tg := openTarget(b, "fusedstore", l, "")
			tg.Phases = Phases{}
			checkCases(b, tg, 64)
			reportPhases(b, tg.Phases)
		})
	}
	// A pool past 4 GiB (reach.go): its exact checks are a shrink step's
	// cost in a default run.
	bf16, _ := layout.Builtin("bf16", 0, 64)
	b.Run("layout=bf16/slots=far", func(b *testing.B) {
		tg := openTargetSets(b, "fusedstore", "bf16", "", FarSlots(bf16), false)
		tg.Phases = Phases{}
		checkCases(b, tg, 64)
		reportPhases(b, tg.Phases)
	})
}

// runCases checks b.N cases of capacity ≤ maxCapacity as a property run
// would, a quarter under each padding, and reports cases/s.
func runCases(b *testing.B, tg *Target, maxCapacity int) {
	ctx := context.Background()
	b.ResetTimer()
	cpu := readCPU()
	defer reportCPU(b, cpu)
	for k, p := range Paddings {
		n := b.N / len(Paddings)
		if k < b.N%len(Paddings) {
			n++
		}
		sys := NewSystem(tg, p, maxCapacity)
		sys.Budget = n
		rng := rand.New(rand.NewSource(int64(k + 1)))
		for range n {
			c := sys.Draw(rng)
			if res, err := sys.Check(ctx, c); err != nil || res.Failed() {
				b.Fatalf("case %v: %v %v", c, err, res)
			}
		}
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "cases/s")
}

// checkCases checks cases of capacity ≤ maxCapacity, drawn round the
// paddings, exactly, as fast as the target takes them, and reports cases/s.
func checkCases(b *testing.B, tg *Target, maxCapacity int) {
	cases := drawCases(tg, maxCapacity)
	b.ResetTimer()
	cpu := readCPU()
	defer reportCPU(b, cpu)
	for i := 0; b.Loop(); i++ {
		res, err := tg.Check(context.Background(), cases[i%len(cases)])
		if err != nil || res.Failed() {
			b.Fatalf("case %v: %v %v", cases[i%len(cases)], err, res)
		}
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "cases/s")
}

// reportPhases reports where the cases' time went, per stage and case.
func reportPhases(b *testing.B, phases Phases) {
	for stage, d := range phases {
		b.ReportMetric(float64(d.Nanoseconds())/1e3/float64(b.N), stage+"-µs/case")
	}
}

// drawCases draws 1024 cases of capacity ≤ maxCapacity for tg's pools,
// round the paddings.
func drawCases(tg *Target, maxCapacity int) []*Case {
	gens := make([]*Gen, len(Paddings))
	for i, p := range Paddings {
		gens[i] = &Gen{Slots: tg.Slots, PageSize: 64, Padding: p, MaxCapacity: maxCapacity, Live: tg.live}
	}
	rng := rand.New(rand.NewSource(1))
	cases := make([]*Case, 1024)
	for i := range cases {
		cases[i] = gens[i%len(gens)].Draw(rng)
	}
	return cases
}

// BenchmarkFuzzExec is one FuzzStore input as a fuzz worker runs it
// (decode, check exactly, judge) on random inputs of the fuzz target's
// shape: in the worker's process with the plugin out of process or in
// process, and handed to a checker process (mode=remote, the lane of
// ./fuzz: the worker's part is the doorbell round trip); go test -fuzz
// adds its mutation and coverage bookkeeping on top.
func BenchmarkFuzzExec(b *testing.B) {
	rng := rand.New(rand.NewSource(1))
	inputs := make([][]byte, 256)
	for i := range inputs {
		inputs[i] = make([]byte, 16+rng.Intn(240))
		rng.Read(inputs[i])
	}
	for _, mode := range []string{"out-of-process", "in-process"} {
		b.Run("mode="+mode, func(b *testing.B) {
			b.Setenv("KVHARNESS_FUZZ_MODE", mode)
			env, err := fuzzing.NewEnv(context.Background(), FuzzTarget, plugins.Servers)
			if err != nil {
				b.Fatal(err)
			}
			defer env.Close()
			benchExecs(b, func(in []byte) string { _, failure := env.Verdict(context.Background(), in); return failure }, inputs)
		})
	}
	b.Run("mode=remote", func(b *testing.B) {
		c, err := remote.Start("FuzzStore")
		if err != nil {
			b.Fatal(err)
		}
		defer c.Close()
		benchExecs(b, func(in []byte) string {
			_, failure, err := c.Check(in)
			if err != nil {
				b.Fatal(err)
			}
			return failure
		}, inputs)
	})
}

// benchExecs runs check over inputs in turn and reports execs/s; any
// failure fails the benchmark (the plugin is a correct one).
func benchExecs(b *testing.B, check func([]byte) string, inputs [][]byte) {
	b.ResetTimer()
	cpu := readCPU()
	for i := 0; b.Loop(); i++ {
		if failure := check(inputs[i%len(inputs)]); failure != "" {
			b.Fatal(failure)
		}
	}
	reportCPU(b, cpu)
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "execs/s")
}

// BenchmarkStoreRPC is the round trip of a StoreBatch with no calls on the
// host backend: the transport's own cost, which a case pays once per
// round trip.
func BenchmarkStoreRPC(b *testing.B) {
	tg := openTarget(b, "fusedstore", "bf16", "")
	ctx := context.Background()
	b.ResetTimer()
	cpu := readCPU()
	for b.Loop() {
		if _, err := StoreBatch(ctx, tg.Plugin, nil); err != nil {
			b.Fatal(err)
		}
	}
	reportCPU(b, cpu)
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
