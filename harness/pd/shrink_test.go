package pd

import "testing"

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
	if !Sequential([]uint64{0, 1, 2}) || Sequential([]uint64{0, 2}) {
		t.Error("Sequential is wrong")
	}
	if f, l := DiffSpan([]byte{1, 2, 3, 4}, []byte{1, 9, 9, 4}); f != 1 || l != 2 {
		t.Errorf("DiffSpan = %d, %d; want 1, 2", f, l)
	}
}
