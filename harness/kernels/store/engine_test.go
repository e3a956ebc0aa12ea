package store

import (
	"fmt"
	"math/rand"
	"strings"
	"testing"

	"github.com/kvharness/kvharness/harness/arena"
	"github.com/kvharness/kvharness/harness/cuda/cudatest"
	"github.com/kvharness/kvharness/harness/layout"
	"github.com/kvharness/kvharness/harness/oracle"
	"github.com/kvharness/kvharness/harness/property"
	"github.com/kvharness/kvharness/internal/testtier"
)

// engineLayout is the built-in engine layout name at d.
func engineLayout(t *testing.T, name string, d layout.Dims) *layout.Layout {
	t.Helper()
	l, err := layout.BuiltinDims(name, d)
	if err != nil {
		t.Fatal(err)
	}
	return l
}

// TestDrawDims: every engine layout gets geometries it takes, and over
// many draws several head counts, head dims and page sizes.
func TestDrawDims(t *testing.T) {
	rng := rand.New(rand.NewSource(1))
	for _, name := range layout.ModelNames() {
		heads, dims, pages := map[int]bool{}, map[int]bool{}, map[int]bool{}
		for range 200 {
			d := DrawDims(rng, name)
			if _, err := layout.BuiltinDims(name, d); err != nil {
				t.Fatalf("%s: drew %+v: %v", name, d, err)
			}
			heads[d.Heads], dims[d.HeadDim], pages[d.PageSize] = true, true, true
		}
		multi := name != "vllm-mla-fp8" && name != "sglang-indexer-preshuffle"
		if multi && (len(heads) < 5 || !heads[3] && !heads[5] && !heads[7]) {
			t.Errorf("%s: head counts drawn %v: want several, odd ones among them", name, heads)
		}
		if name != "vllm-mla-fp8" && (len(dims) < 2 || len(pages) < 2) {
			t.Errorf("%s: head dims %v, page sizes %v: want several of each", name, dims, pages)
		}
	}
}

// TestEngineLayoutsPass: fusedstore stores every engine layout, at
// geometries drawn as engines run them, without a finding under every
// padding, judged by recipe and bit-exact.
func TestEngineLayoutsPass(t *testing.T) {
	geometries, cases := 1, 20 // outside the full suite: one geometry a layout, every other one bit-exact
	if testtier.Full() {
		geometries, cases = 2, 40
	}
	rng := rand.New(rand.NewSource(7))
	for i, name := range layout.ModelNames() {
		for g := range geometries {
			d := DrawDims(rng, name)
			if g == 0 && name != "vllm-mla-fp8" && name != "sglang-indexer-preshuffle" {
				d.Heads = 3 // an odd head count, always
				if _, err := layout.BuiltinDims(name, d); err != nil {
					d.Heads = 1
				}
			}
			t.Run(fmt.Sprintf("%s/H%d-D%d-P%d", name, d.Heads, d.HeadDim, d.PageSize), func(t *testing.T) {
				s := suite(t, "fusedstore", "")
				s.Layouts = []*layout.Layout{engineLayout(t, name, d)}
				s.Cases, s.Slots, s.MaxCapacity = cases, 3*d.PageSize+5, 32
				if g == 1 || geometries == 1 && i%2 == 1 {
					s.Value = layout.Exact
				}
				for _, v := range s.verdicts(t) {
					if !v.Outcome.Passed() {
						t.Errorf("%s: %s", v.Label, failureText(v.Outcome.Failure))
					}
				}
			})
		}
	}
}

// TestEngineMutantsKilled: each engine layout mistake fails on a layout
// it concerns, under the recipe judgement and bit-exact (outside the full
// suite under one of them in turn, the plugin in process: huntSuite).
func TestEngineMutantsKilled(t *testing.T) {
	for i, tc := range engineMutants {
		modes := []layout.Mode{layout.ByRecipe, layout.Exact}
		if !testtier.Full() {
			modes = modes[i%2 : i%2+1] // outside the full suite, each mistake under one judgement, in turn
		}
		for _, mode := range modes {
			t.Run(fmt.Sprintf("%s/%s/%s", tc.variant, tc.layout, mode), func(t *testing.T) {
				d := layout.Dims{Heads: tc.heads, PageSize: 64}
				s := huntSuite(t, "fusedstore", tc.variant)
				s.Layouts = []*layout.Layout{engineLayout(t, tc.layout, d)}
				s.Cases, s.Slots, s.MaxCapacity, s.Value = 100, 200, 16, mode
				s.Paddings = []Padding{tc.padding}
				vs := s.verdicts(t)
				if len(vs) != 1 || vs[0].Outcome.Passed() {
					t.Fatalf("%s survived %s on %s", tc.variant, mode, tc.layout)
				}
			})
		}
	}
}

// TestEngineLayoutsOnCUDA: fusedstore's CUDA stores of the engine
// layouts pass, eagerly and replayed from CUDA graphs, at drawn
// geometries, and each engine mutant dies there too. Skips without a GPU.
func TestEngineLayoutsOnCUDA(t *testing.T) {
	backend := arena.CUDA{Dev: cudatest.Device(t)}
	rng := rand.New(rand.NewSource(11))
	for _, name := range layout.ModelNames() {
		d := DrawDims(rng, name)
		for _, graph := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/H%d-D%d-P%d/graph=%v", name, d.Heads, d.HeadDim, d.PageSize, graph), func(t *testing.T) {
				s := suite(t, "fusedstore", "")
				s.Layouts = []*layout.Layout{engineLayout(t, name, d)}
				s.Cases, s.Slots, s.MaxCapacity, s.Backend, s.Graph = 200, 64*d.PageSize+5, 256, backend, graph
				for _, v := range s.verdicts(t) {
					if !v.Outcome.Passed() {
						t.Errorf("%s: %s", v.Label, failureText(v.Outcome.Failure))
					}
				}
			})
		}
	}
	for _, tc := range engineMutants {
		t.Run(tc.variant+"/"+tc.layout, func(t *testing.T) {
			s := suite(t, "fusedstore", tc.variant)
			s.Layouts = []*layout.Layout{engineLayout(t, tc.layout, layout.Dims{Heads: tc.heads, PageSize: 64})}
			s.Cases, s.Slots, s.MaxCapacity, s.Backend = 100, 200, 16, backend
			s.Paddings = []Padding{tc.padding}
			if vs := s.verdicts(t); len(vs) != 1 || vs[0].Outcome.Passed() {
				t.Fatalf("%s survived on %s on the GPU", tc.variant, tc.layout)
			}
		})
	}
}

// engineMutants are fusedstore's engine layout mistakes, each on a layout
// and head count where it shows.
var engineMutants = []struct {
	variant, layout string
	heads           int
	padding         Padding
}{
	{"nhd-hnd-swapped", "flashinfer-nhd", 4, PadNone},
	{"nhd-hnd-swapped", "flashinfer-hnd", 2, PadNone},
	{"x-split-other-dtype", "vllm-paged", 8, PadNone},
	{"x-split-other-dtype", "vllm-paged-fp8", 1, PadNone},
	{"kv-swapped", "vllm-flash", 1, PadNone},
	{"kv-swapped", "flashinfer-hnd", 2, PadNone},
	{"scale-multiplied", "vllm-flash-fp8", 8, PadNone},
	{"scale-multiplied", "vllm-mla-fp8", 1, PadNone},
	{"e5m2-for-e4m3", "vllm-flash-fp8", 2, PadNone},
	{"fp4-nibbles-swapped", "nvfp4-kv", 4, PadNone},
	{"scale-unswizzled", "nvfp4-kv-hnd", 4, PadNone},
	{"mxfp8-reserved-write", "mxfp8-kv", 2, PadSink},
}

// TestNHDSwapNeedsHeads: NHD and HND are the same bytes for one head, so
// the swap passes there: the mutant dies for what it is, not for a
// stray difference.
func TestNHDSwapNeedsHeads(t *testing.T) {
	s := suite(t, "fusedstore", "nhd-hnd-swapped")
	s.Layouts = []*layout.Layout{engineLayout(t, "flashinfer-nhd", layout.Dims{Heads: 1, PageSize: 16})}
	s.Cases, s.Slots, s.MaxCapacity = 60, 100, 16
	s.Paddings = []Padding{PadNone}
	if vs := s.verdicts(t); len(vs) != 1 || !vs[0].Outcome.Passed() {
		t.Fatalf("the NHD/HND swap failed for one head: %+v", vs[0].Outcome.Failure)
	}
}

// TestDeclaredPadPolicy: a kernel's declared pad policy replaces the
// layout's (DeepSeek-V4's pads, don't-care by default, become kept), and
// one declared for a layout without pads is an error naming both.
func TestDeclaredPadPolicy(t *testing.T) {
	l := engineLayout(t, "dsv4-main", layout.Dims{HeadDim: 512, PageSize: 64})
	kept := func(l *layout.Layout) int {
		n := 0
		for p := range l.NumPieces() {
			n += len(l.Kept(p))
		}
		return n
	}
	if kept(l) != 0 {
		t.Fatalf("dsv4-main keeps pads by default; the test wants a layout whose kernel declares it")
	}
	got, err := declaredLayout(l, oracle.Declared{PadPolicy: layout.PadKeep}, "p")
	if err != nil || kept(got) == 0 {
		t.Fatalf("declared keep: %v, %d kept spans", err, kept(got))
	}
	_, err = declaredLayout(engineLayout(t, "vllm-flash", layout.Dims{PageSize: 16}), oracle.Declared{PadPolicy: layout.PadZero}, "p")
	if err == nil || !strings.Contains(err.Error(), "plugin p declares pad policy") {
		t.Fatalf("pad policy on a layout without pads: %v", err)
	}
}

// TestValueMistakesLeadWithValue: a static-scale mistake on vLLM's cache
// of K pages then V pages is a value violation, named as one: the
// classifier finds a byte's owner across the pool's regions (a page of
// the pool is no repetition of the layout's first page there), where it
// once called every V byte unowned and the failure alias.
func TestValueMistakesLeadWithValue(t *testing.T) {
	for _, variant := range []string{"scale-multiplied", "e5m2-for-e4m3"} {
		t.Run(variant, func(t *testing.T) {
			s := suite(t, "fusedstore", variant)
			s.Layouts = []*layout.Layout{engineLayout(t, "vllm-flash-fp8", layout.Dims{Heads: 2, HeadDim: 64, PageSize: 16})}
			s.Cases, s.Slots, s.MaxCapacity = 40, 200, 16
			s.Paddings = []Padding{PadNone}
			vs := s.verdicts(t)
			if len(vs) != 1 || vs[0].Outcome.Passed() {
				t.Fatalf("%s survived", variant)
			}
			if p := vs[0].Outcome.Failure.Property; p != oracle.Value {
				t.Errorf("%s leads with %s; want value", variant, p)
			}
		})
	}
}

// failureText is a failure's minimal case and its first violations, as
// a GPU log needs them to be diagnosed without a rerun.
func failureText(f *property.Failure[*Case, *Result]) string {
	if f == nil || f.Minimal == nil {
		return "no failure recorded"
	}
	out := fmt.Sprintf("%v at %v:", f.Property, f.Case)
	for i, v := range f.Minimal.Violations {
		if i == 3 {
			out += fmt.Sprintf("\n\t… %d more", len(f.Minimal.Violations)-3)
			break
		}
		out += "\n\t" + v.String()
	}
	return out
}
