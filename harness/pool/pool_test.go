package pool

import (
	"slices"
	"testing"

	"github.com/kvharness/kvharness/harness/layout"
)

func TestPlanGuards(t *testing.T) {
	l, _ := layout.Builtin("fp8-paged", 128, 64)
	g, err := Plan([]Spec{{Name: "a", Layout: l, Slots: 100}, {Name: "b", Layout: l, Slots: 1}}, 1000)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range g.Regions {
		if r.GuardBefore.Len < l.PageBytes() || r.GuardAfter.Len < l.PageBytes() || r.Pool.Len < l.PoolBytes(r.Slots) {
			t.Errorf("region %s: guards %d/%d, pool %d", r.Name, r.GuardBefore.Len, r.GuardAfter.Len, r.Pool.Len)
		}
		if r.Pool.Off%Alignment != 0 || r.GuardBefore.End() != r.Pool.Off || r.Pool.End() != r.GuardAfter.Off {
			t.Errorf("region %s misplaced: %+v", r.Name, r)
		}
	}
	if g.Regions[1].GuardBefore.Off != g.Regions[0].GuardAfter.End() || g.Staging.Off != g.Regions[1].GuardAfter.End() {
		t.Error("regions and staging not back to back")
	}
	if _, err := Plan([]Spec{{Name: "x", Layout: l, Slots: 0}}, 0); err == nil {
		t.Error("zero slots accepted")
	}
	if _, err := Plan([]Spec{{Name: "x", Layout: l, Slots: 1 << 40}}, 0); err == nil {
		t.Error("a pool past MaxArenaBytes accepted")
	}
}

// TestExtend: bytes added where the last window ends extend it; a gap
// starts a new window.
func TestExtend(t *testing.T) {
	var ws []Window
	for _, add := range []Window{{2, 1}, {3, 2}, {5, 1}, {8, 1}, {9, 3}} {
		ws = Extend(ws, add.Off, add.Len)
	}
	if want := []Window{{2, 4}, {8, 4}}; !slices.Equal(ws, want) {
		t.Errorf("Extend: %v, want %v", ws, want)
	}
}
