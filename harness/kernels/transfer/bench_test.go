package transfer

import (
	"context"
	"testing"

	"github.com/kvharness/kvharness/harness/arena"
	"github.com/kvharness/kvharness/harness/internal/plugintest"
	"github.com/kvharness/kvharness/harness/kind"
	"github.com/kvharness/kvharness/harness/results"
)

// TestBenchMovesCorrectTransfers: what a night times is a transfer the
// oracle passes for the correct plugin (a room of the unit's pages in
// every buffer) and that a mutant fails, so its figure is of the real
// work; each cell's samples come back as asked.
func TestBenchMovesCorrectTransfers(t *testing.T) {
	s := kind.BenchSetup{HeadDim: 128, PageSize: 16, Seed: 1, Tokens: []int{16, 256}, Backend: arena.SHM{}}
	if err := Bench.Validate(s); err != nil {
		t.Fatal(err)
	}
	gs, err := Bench.Groups(nil, s)
	if err != nil || len(gs) != 1 || gs[0].Name != "kv+state+indexk" {
		t.Fatalf("groups %+v, %v; want one, kv+state+indexk", gs, err)
	}
	g, err := nightGeometry(s)
	if err != nil {
		t.Fatal(err)
	}
	dir := plugintest.Dir(t)
	for variant, fail := range map[string]bool{"": false, "skip-buffer": true} {
		sys := NewSystem(inProcess(), dir, Config{Variant: variant, Seed: 1, Backend: arena.SHM{}}, nil)
		for _, tokens := range s.Tokens {
			c := unitCase(g, results.Identity{Kernel: "transfer", Tokens: tokens, PageSize: 16})
			res, err := sys.Check(context.Background(), c)
			if err != nil || res.Failed() != fail {
				t.Errorf("variant %q, %d tokens: the bench's transfer failed %v (%v), want %v", variant, tokens, res.Failed(), err, fail)
			}
		}
		sys.Close(context.Background())
	}
	bt, err := Bench.Open(context.Background(), inProcess(), dir, gs[0], s)
	if err != nil {
		t.Fatal(err)
	}
	defer bt.Close(context.Background())
	for _, k := range []string{"transfer", results.KernelCopy, results.KernelEmpty} {
		id := results.Identity{Kernel: k, HeadDim: 128, PageSize: 16, Tokens: 256, Mode: results.Eager, Cache: results.Hot, Timing: results.PerLaunch}
		got, err := bt.Time(context.Background(), id, kind.Chunk{Warmup: 1, Iterations: 4, Batch: 1})
		if err != nil || len(got.Ns) != 4 || got.Ns[0] <= 0 || got.Device != "cpu" {
			t.Errorf("%s: %+v, %v; want 4 positive samples on the cpu", k, got, err)
		}
	}
}
