package pd

import (
	"fmt"
	"testing"
)

// TestCutPoolAndHelpers: a pool cut to the pages in use keeps every
// buffer's shift inside it and leaves the original alone; a cut that is
// no smaller is refused; ids and spans read as the shrinkers and judges
// need.
func TestCutPoolAndHelpers(t *testing.T) {
	g := DefaultGeometry(1, 16) // the index-K buffer's shift is 5
	x, ok := g.CutPool(3)
	if !ok || x.Pages != 3 || x.Buffers[2].Shift != 2 || g.Pages != 16 || g.Buffers[2].Shift != 5 {
		t.Fatalf("CutPool(3) = %d pages, shift %d (ok %v); the original has %d, %d", x.Pages, x.Buffers[2].Shift, ok, g.Pages, g.Buffers[2].Shift)
	}
	if _, ok := g.CutPool(16); ok {
		t.Error("a cut to every page was taken")
	}
	if err := g.Fits(16 * g.PageSize); err != nil {
		t.Errorf("a pool that fits: %v", err)
	}
	if err := g.Fits(16*g.PageSize - 1); err == nil {
		t.Error("a pool one token too large fits")
	}
	if err := g.FitsRooms(0, 2, 2); err != nil {
		t.Errorf("two rooms of at most two: %v", err)
	}
	for _, rooms := range []int{0, 3} {
		if err := g.FitsRooms(0, rooms, 2); err == nil || err.Error() != fmt.Sprintf("%d rooms: want 1..2", rooms) {
			t.Errorf("%d rooms of at most two: %v", rooms, err)
		}
	}
	if err := g.FitsRooms(16*g.PageSize-1, 1, 2); err == nil {
		t.Error("rooms in a pool one token too large fit")
	}
	if !Sequential([]uint64{0, 1, 2}) || Sequential([]uint64{0, 2}) {
		t.Error("Sequential is wrong")
	}
	if f, l := DiffSpan([]byte{1, 2, 3, 4}, []byte{1, 9, 9, 4}); f != 1 || l != 2 {
		t.Errorf("DiffSpan = %d, %d; want 1, 2", f, l)
	}
}

// shrinkCase is the least a pd shrink step works on: a geometry and rooms
// of pages with ids.
type shrinkCase struct {
	g     Geometry
	ids   []uint64
	pages []int64
}

func (c *shrinkCase) Clone() *shrinkCase {
	return &shrinkCase{g: c.g.Clone(), ids: append([]uint64(nil), c.ids...), pages: append([]int64(nil), c.pages...)}
}

// TestShrinkPoolAndIDs: each step makes one smaller clone, leaving the
// case alone, and none when the case is as small already.
func TestShrinkPoolAndIDs(t *testing.T) {
	geometry := func(c *shrinkCase) *Geometry { return &c.g }
	rooms := func(c *shrinkCase) []uint64 { return c.ids }
	id := func(r *uint64) *uint64 { return r }
	c := &shrinkCase{g: DefaultGeometry(1, 16), ids: []uint64{7, 3}, pages: []int64{0, 4}}
	xs := ShrinkPool(c, geometry, c.pages[:1], c.pages[1:])
	if len(xs) != 1 || xs[0].g.Pages != 5 || c.g.Pages != 16 {
		t.Fatalf("ShrinkPool of pages 0 and 4 in 16: %d variants; want one of 5 pages, the case left at 16", len(xs))
	}
	if xs := ShrinkPool(xs[0], geometry, xs[0].pages); xs != nil {
		t.Errorf("ShrinkPool of a pool cut already made %d variants", len(xs))
	}
	xs = ShrinkIDs(c, rooms, id)
	if len(xs) != 1 || xs[0].ids[0] != 0 || xs[0].ids[1] != 1 || c.ids[0] != 7 {
		t.Fatalf("ShrinkIDs of 7, 3: %d variants; want one of 0, 1, the case left alone", len(xs))
	}
	if xs := ShrinkIDs(xs[0], rooms, id); xs != nil {
		t.Errorf("ShrinkIDs of 0, 1 made %d variants", len(xs))
	}
}

// TestIncremental: candidates over the case's geometry come first, in
// order; those over others follow, in order, over geometries the shrink
// opened and at most MaxShrinkGeometries - len(opened) new ones a step.
func TestIncremental(t *testing.T) {
	g := DefaultGeometry(2, 8)
	type cand struct {
		id int
		g  Geometry
	}
	var cands []cand
	for i := range 2 * MaxShrinkGeometries {
		other := g.Clone()
		other.Pages = 100 + i
		cands = append(cands, cand{100 + i, other}, cand{i, g})
	}
	geometryOf := func(c cand) Geometry { return c.g }
	opened := map[string]bool{}
	out := Incremental(cands, g, geometryOf, opened)
	for i := range 2 * MaxShrinkGeometries {
		if out[i].id != i {
			t.Fatalf("candidate %d is %d; want the same-geometry ones first, in order", i, out[i].id)
		}
	}
	rest := out[2*MaxShrinkGeometries:]
	if len(rest) != MaxShrinkGeometries || rest[0].id != 100 || len(opened) != 0 {
		t.Fatalf("%d other-geometry candidates kept, first %v, %d opened; want %d, from 100, none opened", len(rest), rest[0].id, len(opened), MaxShrinkGeometries)
	}
	// Offered geometries left untried cost nothing: a later step offers
	// new ones up to the budget the opened ones leave.
	for i := range MaxShrinkGeometries - 1 {
		opened[cands[2*i].g.Key()] = true
	}
	again := Incremental([]cand{{7, cands[0].g}, {8, cands[len(cands)-2].g}, {9, cands[len(cands)-4].g}}, g, geometryOf, opened)
	if len(again) != 2 || again[0].id != 7 || again[1].id != 8 {
		t.Fatalf("a later step kept %v; want the one over an opened geometry and one new one", again)
	}
	// A cut pool goes before the other geometries.
	cut := g.Clone()
	cut.Pages = 2
	if out := Incremental([]cand{{1, cands[2].g}, {2, cut}, {3, g}}, g, geometryOf, map[string]bool{}); out[0].id != 3 || out[1].id != 2 || out[2].id != 1 {
		t.Fatalf("order %v; want the same geometry, the cut pool, then the rest", out)
	}
	opened[cands[len(cands)-2].g.Key()] = true
	if again := Incremental([]cand{{9, cands[len(cands)-4].g}}, g, geometryOf, opened); len(again) != 0 {
		t.Fatalf("with %d geometries opened a step kept %v; want none new", len(opened), again)
	}
}
