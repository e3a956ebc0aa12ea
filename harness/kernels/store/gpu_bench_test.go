package store

import (
	"context"
	"fmt"
	"math/rand"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/kvharness/kvharness/harness/arena"
	"github.com/kvharness/kvharness/harness/cuda"
	"github.com/kvharness/kvharness/harness/cuda/cudatest"
	"github.com/kvharness/kvharness/harness/internal/kindtest"
	"github.com/kvharness/kvharness/harness/internal/plugintest"
	"github.com/kvharness/kvharness/harness/layout"
)

// BenchmarkCheckedCasesCUDA is the GPU's checked-case rate on the issue's
// shape: a 1 Mi-slot pool (three of them, one per run of a case) in device
// memory, capacity ≤ 512, fusedstore's CUDA kernels, eager and replayed
// from a CUDA graph; and on a 4096-slot pool, where scanning the pools
// costs next to nothing, to show the fixed cost of a case. It also reports
// the harness's trips to its device thread per case, the cost that
// batching keeps down.
func BenchmarkCheckedCasesCUDA(b *testing.B) {
	dev := cudatest.Device(b)
	for _, sh := range []struct {
		layout string
		slots  int
		graph  bool
	}{
		{"bf16", 1 << 20, false}, {"bf16", 1 << 20, true},
		{"fp8-paged", 1 << 20, false}, {"fp8-paged", 1 << 20, true},
		{"bf16", 4096, false},
	} {
		mode := "eager"
		if sh.graph {
			mode = "graph"
		}
		b.Run(fmt.Sprintf("layout=%s/slots=%d/mode=%s", sh.layout, sh.slots, mode), func(b *testing.B) {
			p, dir := plugintest.Start(b, "fusedstore")
			lay := kindtest.Layout(b, sh.layout, 128, 64)
			phases := Phases{}
			tg, err := Open(context.Background(), p, dir, Config{Layout: lay, Slots: sh.slots, MaxCapacity: 512,
				Seed: 7, Graph: sh.graph, Backend: arena.CUDA{Dev: dev}, Phases: phases})
			if err != nil {
				b.Fatal(err)
			}
			defer tg.Close(context.Background())
			before := trips(tg)
			clear(phases)
			checkCases(b, tg, 512)
			b.ReportMetric(float64(trips(tg)-before)/float64(b.N), "trips/case")
			for stage, d := range phases {
				b.ReportMetric(float64(d.Microseconds())/float64(b.N), stage+"-µs/case")
			}
		})
	}
}

// BenchmarkCheckedCasesCUDAAhead is BenchmarkCheckedCasesCUDA as a
// property run checks cases (kvharness check): drawn, checked ahead on
// pool sets of their own, several per round trip, proved by a scan per
// window; a quarter of the cases under each padding.
func BenchmarkCheckedCasesCUDAAhead(b *testing.B) {
	dev := cudatest.Device(b)
	for _, sh := range []struct {
		layout string
		graph  bool
	}{{"bf16", false}, {"bf16", true}, {"fp8-paged", false}} {
		mode := "eager"
		if sh.graph {
			mode = "graph"
		}
		b.Run(fmt.Sprintf("layout=%s/slots=1048576/mode=%s", sh.layout, mode), func(b *testing.B) {
			p, dir := plugintest.Start(b, "fusedstore")
			tg, err := Open(context.Background(), p, dir, Config{Layout: kindtest.Layout(b, sh.layout, 128, 64), Slots: 1 << 20,
				MaxCapacity: 512, Seed: 7, Graph: sh.graph, Backend: arena.CUDA{Dev: dev}, Sets: AutoSets})
			if err != nil {
				b.Fatal(err)
			}
			defer tg.Close(context.Background())
			tg.Phases = Phases{}
			before := trips(tg)
			runCases(b, tg, 512)
			b.ReportMetric(float64(trips(tg)-before)/float64(b.N), "trips/case")
			b.ReportMetric(float64(tg.Sets), "sets")
			answered, tainted := tg.AheadCounts()
			b.ReportMetric(float64(answered)/float64(b.N), "ahead-share")
			b.ReportMetric(float64(tainted), "tainted-windows")
			reportPhases(b, tg.Phases)
		})
	}
}

// BenchmarkCheckedCasesCUDAAheadJobs is BenchmarkCheckedCasesCUDAAhead on
// several targets at once, each with its plugin process and its pool sets,
// as `kvharness check --jobs N` runs its rows; cases/s is the total.
func BenchmarkCheckedCasesCUDAAheadJobs(b *testing.B) {
	dev := cudatest.Device(b)
	lay := kindtest.Layout(b, "bf16", 128, 64)
	for _, jobs := range []int{2, 4} {
		b.Run(fmt.Sprintf("layout=bf16/slots=1048576/jobs=%d", jobs), func(b *testing.B) {
			targets := openJobs(b, dev, lay, jobs, AutoSets)
			eachJob(b, targets, func(j int, tg *Target) error {
				n := b.N / jobs
				if j < b.N%jobs {
					n++
				}
				sys := NewSystem(tg, Paddings[j%len(Paddings)], 512)
				sys.Budget = n
				rng := rand.New(rand.NewSource(int64(j + 1)))
				for range n {
					c := sys.Draw(rng)
					if res, err := sys.Check(context.Background(), c); err != nil || res.Failed() {
						return fmt.Errorf("case %v: %v %v", c, err, res)
					}
				}
				return nil
			})
			var answered, tainted int
			for _, tg := range targets {
				a, t := tg.AheadCounts()
				answered, tainted = answered+a, tainted+t
			}
			b.ReportMetric(float64(answered)/float64(b.N), "ahead-share")
			b.ReportMetric(float64(tainted), "tainted-windows")
		})
	}
}

// BenchmarkStoreRPCCUDA isolates the store round trip of a checked case on
// the GPU: StoreBatch with no calls (the transport and the plugin's wait),
// one call, and a case's three, each reporting the plugin's own handler
// time, so that the transport's share is the difference.
func BenchmarkStoreRPCCUDA(b *testing.B) {
	dev := cudatest.Device(b)
	p, dir := plugintest.Start(b, "fusedstore")
	lay := kindtest.Layout(b, "bf16", 128, 64)
	ctx := context.Background()
	tg, err := Open(ctx, p, dir, Config{Layout: lay, Slots: 1 << 20, MaxCapacity: 512, Seed: 7, Backend: arena.CUDA{Dev: dev}})
	if err != nil {
		b.Fatal(err)
	}
	defer tg.Close(ctx)
	c := (&Gen{Slots: tg.Slots, PageSize: 64, Padding: PadCount, MaxCapacity: 512}).Draw(rand.New(rand.NewSource(3)))
	sc := NewOracle(tg.Layout, tg.Region(), uint64(tg.Seed), c, tg.Declared)
	if err := tg.stage(0, c, sc.Rows()); err != nil {
		b.Fatal(err)
	}
	reqs := tg.requests([]run{{0, poolCase, c}, {0, poolRepeat, c}, {0, poolUnpadded, c}})
	for _, n := range []int{0, 1, 3} {
		b.Run(fmt.Sprintf("calls=%d", n), func(b *testing.B) {
			var handler time.Duration
			for b.Loop() {
				h, err := StoreBatch(ctx, tg.Plugin, reqs[:n])
				if err != nil {
					b.Fatal(err)
				}
				handler += h
			}
			b.ReportMetric(float64(handler.Microseconds())/float64(b.N), "handler-µs/op")
		})
	}
}

// BenchmarkCheckedCasesCUDAJobs checks cases on several targets at once,
// each with its own plugin process and three 1 Mi-slot pools, as
// `kvharness check --jobs N` runs its layout × padding combinations. A
// case's time is mostly waiting (the RPC, the copies and scans on the
// GPU), so the jobs overlap; cases/s is the total over all of them.
func BenchmarkCheckedCasesCUDAJobs(b *testing.B) {
	dev := cudatest.Device(b)
	lay := kindtest.Layout(b, "bf16", 128, 64)
	for _, jobs := range []int{1, 2, 4, 8} {
		b.Run(fmt.Sprintf("layout=bf16/slots=1048576/jobs=%d", jobs), func(b *testing.B) {
			targets := openJobs(b, dev, lay, jobs, 0)
			cases := drawCases(targets[0], 512)
			var next atomic.Int64
			eachJob(b, targets, func(_ int, tg *Target) error {
				for i := next.Add(1) - 1; i < int64(b.N); i = next.Add(1) - 1 {
					c := cases[i%int64(len(cases))]
					if res, err := tg.Check(context.Background(), c); err != nil || res.Failed() {
						return fmt.Errorf("case %v: %v %v", c, err, res)
					}
				}
				return nil
			})
		})
	}
}

// openJobs opens n fusedstore targets of 1 Mi-slot pools of lay on dev,
// each with a plugin process of its own and sets pool sets to check ahead
// on; they close when the benchmark ends.
func openJobs(b *testing.B, dev *cuda.Device, lay *layout.Layout, n, sets int) []*Target {
	targets := make([]*Target, n)
	for i := range targets {
		p, dir := plugintest.Start(b, "fusedstore")
		tg, err := Open(context.Background(), p, dir, Config{Layout: lay, Slots: 1 << 20, MaxCapacity: 512,
			Seed: 7, Backend: arena.CUDA{Dev: dev}, Sets: sets})
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { tg.Close(context.Background()) })
		targets[i] = tg
	}
	return targets
}

// eachJob runs work on every target at once, a goroutine each, fails the
// benchmark with the first error any of them returns, and reports the
// cases/s of all of them together.
func eachJob(b *testing.B, targets []*Target, work func(j int, tg *Target) error) {
	b.ResetTimer()
	var once sync.Once
	var first error
	var wg sync.WaitGroup
	for j, tg := range targets {
		wg.Go(func() {
			if err := work(j, tg); err != nil {
				once.Do(func() { first = err })
			}
		})
	}
	wg.Wait()
	if first != nil {
		b.Fatal(first)
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "cases/s")
}

// trips counts the trips to the device thread of tg's arena.
func trips(tg *Target) uint64 {
	if m, ok := tg.Mem().(interface{ Trips() uint64 }); ok {
		return m.Trips()
	}
	return 0
}
