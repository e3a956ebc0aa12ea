package sequence

import (
	"context"
	"math/rand"
	"testing"

	"github.com/kvharness/kvharness/harness/arena"
	"github.com/kvharness/kvharness/harness/internal/plugintest"
)

// BenchmarkSequence1Mi plays serving-like sequences on pools of 1 Mi
// slots a layer (two layers: head dims 128 and 64, pages of 16 tokens),
// prompts up to 2,048 tokens, decode graphs captured up to 64, against
// fusedstore in process, and reports the step rate and the share of the
// time spent in the ownership check (page snapshots at allocation, a
// digest of every live page in every layer after every step, diffs).
//
//	go test -run='^$' -bench=Sequence1Mi ./harness/kernels/sequence
func BenchmarkSequence1Mi(b *testing.B) {
	g := Geometry{HeadDims: []int{128, 64}, PageSize: 16, Pages: 1 << 16, Capacities: []int{1, 2, 4, 8, 16, 32, 64}}
	tm := &Timing{}
	sys := NewSystem(bundled(b, "fusedstore"), plugintest.Dir(b), Config{Backend: arena.SHM{}, Seed: 1, Geometry: g, Timing: tm}, nil)
	defer sys.Close(context.Background())
	gen := &Gen{Geometry: g, Steps: 200, NoEvict: false, Prompt: 2048}
	rng := rand.New(rand.NewSource(1))
	cases := make([]*Case, 8)
	for i := range cases {
		cases[i] = gen.Draw(rng)
	}
	if _, err := sys.Check(context.Background(), cases[0]); err != nil { // opens the target
		b.Fatal(err)
	}
	*tm = Timing{}
	live := 0
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		r, err := sys.Check(context.Background(), cases[i%len(cases)])
		if err != nil || r.Failed() {
			b.Fatalf("%v %v", err, r)
		}
		live += r.Checked
	}
	total := b.Elapsed().Seconds()
	b.ReportMetric(float64(tm.Steps)/total, "steps/s")
	b.ReportMetric(100*tm.Check.Seconds()/total, "%check")
	b.ReportMetric(float64(live)/float64(tm.Steps), "pages/step")
}
