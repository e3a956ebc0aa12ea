package load

import (
	"context"
	"testing"

	"github.com/kvharness/kvharness/harness/arena"
	"github.com/kvharness/kvharness/harness/internal/plugintest"
	"github.com/kvharness/kvharness/harness/kind"
	"github.com/kvharness/kvharness/harness/protocol/kvpb"
	"github.com/kvharness/kvharness/harness/results"
)

// TestBenchTimesLoads: the bench target of a night's loads times each
// unit's load and its copy inside the plugin, as many samples as asked;
// the bytes a cell counts are those the plugin says one load moves; and
// tokens that are not whole pages are refused.
func TestBenchTimesLoads(t *testing.T) {
	s := kind.BenchSetup{HeadDim: 128, PageSize: 16, Seed: 1, Tokens: []int{16, 128}, Backend: arena.SHM{}}
	if err := Bench.Validate(s); err != nil {
		t.Fatal(err)
	}
	gs, err := Bench.Groups(nil, s)
	if err != nil || len(gs) != 1 || gs[0].Name != "kv+indexk+scales" {
		t.Fatalf("groups %+v, %v; want one, kv+indexk+scales", gs, err)
	}
	p := inProcess()
	bt, err := Bench.Open(context.Background(), p, plugintest.Dir(t), gs[0], s)
	if err != nil {
		t.Fatal(err)
	}
	defer bt.Close(context.Background())
	for _, tokens := range s.Tokens {
		for _, k := range []string{"load", results.KernelCopy} {
			id := results.Identity{Kernel: k, HeadDim: 128, PageSize: 16, Tokens: tokens, Mode: results.Eager, Cache: results.Hot, Timing: results.PerLaunch}
			got, err := bt.Time(context.Background(), id, kind.Chunk{Warmup: 1, Iterations: 5, Batch: 1})
			if err != nil || len(got.Ns) != 5 || got.Ns[0] <= 0 || got.Device != "cpu" {
				t.Errorf("%s of %d tokens: %+v, %v; want 5 positive samples on the cpu", k, tokens, got, err)
			}
		}
		lt := bt.(*benchTarget)
		c := lt.loadCase(tokens / 16)
		resp, err := LoadBench(context.Background(), p, &kvpb.LoadBenchRequest{Load: lt.t.request(c, lt.t.slots(c)), Iterations: 1})
		if err != nil {
			t.Fatal(err)
		}
		id := results.Identity{Kernel: "load", HeadDim: 128, PageSize: 16, Tokens: tokens}
		if b := Bench.Bytes(gs[0], id); b != int64(resp.Bytes) {
			t.Errorf("%d tokens: the cell counts %d bytes, the plugin moves %d", tokens, b, resp.Bytes)
		}
	}
	s.Tokens = []int{24}
	if err := Bench.Validate(s); err == nil {
		t.Error("24 tokens of 16-token pages: no refusal")
	}
}
