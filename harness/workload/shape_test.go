package workload

import (
	"slices"
	"testing"
)

// TestSpaceDraw: rows take turns at the awkward: row 0 an awkward head
// dim, row 1 page size 1, row 2 an engine's shape; every draw is in the
// space; a space without an awkward head dim still draws from it.
func TestSpaceDraw(t *testing.T) {
	sp := Space{HeadDims: HeadDimCandidates(), PageSizes: EnginePageSizes}
	slices.Sort(sp.HeadDims)
	for seed := range int64(50) {
		for k := range 8 {
			x := sp.Draw(RowRand(seed, "bf16", k), k)
			if !sp.Has(x) {
				t.Fatalf("seed %d row %d: %v outside the space", seed, k, x)
			}
			if k%4 != 1 && x.PageSize == 1 {
				t.Errorf("seed %d row %d: page size 1 out of its turn", seed, k)
			}
			switch k % 4 {
			case 0:
				if !Awkward(x.HeadDim) {
					t.Errorf("seed %d row %d: head dim %d is a multiple of 16", seed, k, x.HeadDim)
				}
			case 1:
				if x.PageSize != 1 {
					t.Errorf("seed %d row %d: page size %d, want 1", seed, k, x.PageSize)
				}
			case 2:
				if !slices.Contains(EngineHeadDims, x.HeadDim) || !slices.Contains(EnginePageSizes, x.PageSize) {
					t.Errorf("seed %d row %d: %v is not an engine's shape", seed, k, x)
				}
			}
		}
	}
	one := Single(Shape{HeadDim: 128, PageSize: 64})
	if x := one.Draw(RowRand(1, "bf16", 0), 0); x != (Shape{HeadDim: 128, PageSize: 64}) {
		t.Errorf("a one-shape space drew %v", x)
	}
	if RowRand(1, "bf16", 0).Int63() == RowRand(1, "fp8-rows", 0).Int63() {
		t.Error("two layouts' rows draw from one source")
	}
}

// TestUnexplored names the candidates a space lacks, per axis.
func TestUnexplored(t *testing.T) {
	sp := Space{HeadDims: []int{64, 128}, PageSizes: []int{64}}
	if got := sp.Unexplored([]int{64, 120, 128}, []int{1, 64}); got != "head dims 120, page sizes 1" {
		t.Errorf("Unexplored = %q", got)
	}
	if got := sp.Unexplored(nil, nil); got != "" {
		t.Errorf("nothing asked: %q", got)
	}
}

// TestRanges: membership, size, the n-th slot and a random slot stay in
// the ranges, which merge where they meet and clip to the pool.
func TestRanges(t *testing.T) {
	rs := Merged([]Range{{90, 120}, {-5, 10}, {10, 20}, {50, 60}}, 100)
	want := Ranges{{0, 20}, {50, 60}, {90, 100}}
	if !slices.Equal(rs, want) {
		t.Fatalf("Merged = %v, want %v", rs, want)
	}
	if rs.Size() != 40 || rs.Nth(0) != 0 || rs.Nth(20) != 50 || rs.Nth(39) != 99 || rs.Nth(40) != -1 {
		t.Errorf("size %d, nth 0/20/39/40 = %d %d %d %d", rs.Size(), rs.Nth(0), rs.Nth(20), rs.Nth(39), rs.Nth(40))
	}
	for _, s := range []int64{0, 19, 50, 59, 90, 99} {
		if !rs.Contains(s) {
			t.Errorf("%d not contained", s)
		}
	}
	for _, s := range []int64{-1, 20, 49, 60, 89, 100} {
		if rs.Contains(s) {
			t.Errorf("%d contained", s)
		}
	}
	rng := RowRand(1, "x", 0)
	for range 1000 {
		if s := rs.Random(rng); !rs.Contains(s) {
			t.Fatalf("Random gave %d", s)
		}
	}
}

// TestDrawHeads: a space of head counts draws one it holds each row, an
// odd count above one in turn 0 whenever it holds one, several counts
// over rows; a space without head counts draws none (a layout of one
// record per slot), and its head dims and page sizes as before.
func TestDrawHeads(t *testing.T) {
	sp := Space{HeadDims: []int{64, 120, 128}, PageSizes: []int{1, 16, 64}, Heads: []int{1, 2, 3, 8}}
	seen := map[int]bool{}
	for k := range 40 {
		x := sp.Draw(RowRand(3, "vllm-flash", k), k)
		if !sp.Has(x) {
			t.Fatalf("row %d drew %v, outside the space", k, x)
		}
		if k%4 == 0 && x.Heads != 3 {
			t.Errorf("row %d (turn 0) drew %d heads; want the odd count 3", k, x.Heads)
		}
		seen[x.Heads] = true
		plain := Space{HeadDims: sp.HeadDims, PageSizes: sp.PageSizes}.Draw(RowRand(3, "vllm-flash", k), k)
		if plain.Heads != 0 || plain.HeadDim != x.HeadDim || plain.PageSize != x.PageSize {
			t.Errorf("row %d: without heads drew %v; with them %v", k, plain, x)
		}
	}
	if len(seen) < 3 {
		t.Errorf("head counts drawn %v: want several", seen)
	}
	if s := (Shape{Heads: 3, HeadDim: 128, PageSize: 16}).String(); s != "H=3 D=128 P=16" {
		t.Errorf("shape prints %q", s)
	}
}
