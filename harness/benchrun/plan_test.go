package benchrun

import (
	"slices"
	"strings"
	"testing"

	"github.com/kvharness/kvharness/harness/kind"
	"github.com/kvharness/kvharness/harness/plugin"
	"github.com/kvharness/kvharness/harness/protocol"
	"github.com/kvharness/kvharness/harness/results"
	"github.com/kvharness/kvharness/harness/shard"
)

func testPlugins() []described {
	geo := func(names ...string) []plugin.Geometry {
		var out []plugin.Geometry
		for _, n := range names {
			out = append(out, plugin.Geometry{Layout: n})
		}
		return out
	}
	var out []described
	for _, d := range []*plugin.Description{
		{Name: "fusedstore", Version: "1.0.0", Kernels: []protocol.Kernel{"store"}, Layouts: geo("bf16", "fp8-paged", "fp8-rows")},
		{Name: "bf16scatter", Version: "1.0.0", Kernels: []protocol.Kernel{"store"}, Layouts: geo("bf16")},
	} {
		groups, err := kind.LayoutGroups(d, testMatrix().Setup(nil))
		if err != nil {
			panic(err)
		}
		out = append(out, described{d.Name, d, groups})
	}
	return out
}

// testBench is a kind that times what a store does: every mode, cache
// and timing, with a copy and an empty launch beside.
var testBench = &kind.Bench{
	Modes:   []results.Mode{results.Eager, results.Graph},
	Caches:  []results.Cache{results.Hot, results.Cold},
	Timings: []results.Timing{results.PerLaunch, results.Batched},
	Copy:    true, Empty: true,
}

func testMatrix() Matrix {
	m := Default("fusedstore", "bf16scatter")
	m.Kernel = "store"
	m.Layouts, m.Tokens = []string{"bf16", "fp8-paged"}, []int{1, 32, 512, 4096}
	return m
}

func keysOf(ids []results.Identity) []results.Key {
	var out []results.Key
	for _, id := range ids {
		out = append(out, id.Key())
	}
	return out
}

// TestShardsUnionIsWhole: the n shards of a plan own every unit once, and
// their cells together are the whole plan's, each once; a store's copy is
// in its shard.
func TestShardsUnionIsWhole(t *testing.T) {
	for _, onGPU := range []bool{false, true} {
		whole, err := plan(testMatrix(), testBench, testPlugins(), onGPU, shard.Whole)
		if err != nil {
			t.Fatal(err)
		}
		all := keysOf(whole.Cells())
		for n := 1; n <= 7; n++ {
			var union []results.Key
			units := 0
			for i := 1; i <= n; i++ {
				p, err := plan(testMatrix(), testBench, testPlugins(), onGPU, shard.Spec{Index: i, Count: n})
				if err != nil {
					t.Fatal(err)
				}
				if p.Digest() != whole.Digest() {
					t.Errorf("n=%d: shard %d plans %s, the whole %s", n, i, p.Digest(), whole.Digest())
				}
				units += len(p.Units())
				union = append(union, keysOf(p.Cells())...)
				checkCopies(t, p)
			}
			if units != len(whole.all) {
				t.Errorf("n=%d: shards own %d units of %d", n, units, len(whole.all))
			}
			got, want := slices.Sorted(slices.Values(union)), slices.Sorted(slices.Values(all))
			if !slices.Equal(got, want) {
				t.Errorf("gpu=%v n=%d: the shards' cells (%d) are not the whole plan's (%d)", onGPU, n, len(got), len(want))
			}
		}
		if len(all) != len(slices.Compact(slices.Sorted(slices.Values(all)))) {
			t.Errorf("the whole plan lists a cell twice")
		}
	}
}

// checkCopies: every store cell of a plan has its copy in the same plan.
func checkCopies(t *testing.T, p *Plan) {
	t.Helper()
	have := map[results.Key]bool{}
	for _, id := range p.Cells() {
		have[id.Key()] = true
	}
	for _, id := range p.Cells() {
		if cp := withKernel(id, results.KernelCopy, id.Tokens, results.Eager); !results.IsReference(id.Kernel) && !have[cp.Key()] {
			t.Errorf("store %s without its copy in its shard", id.Name())
		}
	}
}

// TestPlanCells: the CPU plan of the test matrix has, per plugin and
// layout and token count, a store and a copy for each of hot per-launch,
// hot batched and cold per-launch, and per plugin and layout three empty
// launches; graph cells appear on a GPU only.
func TestPlanCells(t *testing.T) {
	p, err := plan(testMatrix(), testBench, testPlugins(), false, shard.Whole)
	if err != nil {
		t.Fatal(err)
	}
	if n, want := len(p.Cells()), 3*(4*6+3); n != want {
		t.Errorf("%d cells, want %d", n, want)
	}
	for _, id := range p.Cells() {
		if id.Mode == results.Graph {
			t.Errorf("graph cell %s on the CPU", id.Name())
		}
	}
	g, _ := plan(testMatrix(), testBench, testPlugins(), true, shard.Whole)
	if n, want := len(g.Cells()), 3*(4*(3+6)+6); n != want {
		t.Errorf("gpu: %d cells, want %d", n, want)
	}
	if _, err := plan(testMatrix(), testBench, testPlugins(), false, shard.Spec{Index: 3, Count: 2}); err == nil {
		t.Error("shard 3/2 planned")
	}
}

// TestOrderShuffles: a pass's order is a permutation of the cells, the
// same for the same pass and another for another pass.
func TestOrderShuffles(t *testing.T) {
	p, _ := plan(testMatrix(), testBench, testPlugins(), false, shard.Whole)
	cells := p.groups[0].cells
	a, b, c := order(cells, 1, 1, 0), order(cells, 1, 1, 0), order(cells, 1, 2, 0)
	if !slices.Equal(keysOf(a), keysOf(b)) || slices.Equal(keysOf(a), keysOf(c)) {
		t.Error("pass orders: want the same order for a pass, another for another pass")
	}
	if got, want := slices.Sorted(slices.Values(keysOf(c))), slices.Sorted(slices.Values(keysOf(cells))); !slices.Equal(got, want) {
		t.Error("a pass's order is not a permutation of the cells")
	}
}

func TestDuration(t *testing.T) {
	for ns, want := range map[float64]string{93: "93.0ns", 12_840: "12.8µs", 2_620_936.76: "2.62ms", 8_085_150: "8.09ms", 2.62e9: "2.62s", 0: "-", 1.5: "1.50ns", 205_710: "206µs"} {
		if got := Duration(ns); got != want {
			t.Errorf("Duration(%v) = %q, want %q", ns, got, want)
		}
	}
}

func TestMatrixRunsValidate(t *testing.T) {
	for js, want := range map[string]string{
		`{"plugins": ["a"], "passes": -1}`:          "passes -1",
		`{"plugins": ["a"], "passes": 101}`:         "passes 101",
		`{"plugins": ["a"], "quantiles": [0.5, 1]}`: "quantile 1",
	} {
		if _, err := ParseMatrix([]byte(js)); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want an error naming %q", js, err, want)
		}
	}
	m, err := ParseMatrix([]byte(`{"plugins": ["a"], "quantiles": [0.99, 0.2]}`))
	if err != nil || !slices.Equal(m.quantiles(), []float64{0.5, 0.99, 0.2}) || m.passes() != DefaultPasses {
		t.Errorf("quantiles %v, passes %d, %v; want the median first, then 0.99 and 0.2, and %d passes", m.quantiles(), m.passes(), err, DefaultPasses)
	}
}
