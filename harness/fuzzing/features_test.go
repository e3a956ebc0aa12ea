package fuzzing

import (
	"slices"
	"testing"
)

func TestCount(t *testing.T) {
	for n, want := range map[int]string{0: "rows<1", 1: "rows<2", 2: "rows<4", 3: "rows<4", 4: "rows<8", 64: "rows<128", -1: "rows<1"} {
		if got := Count("rows", n); got != want {
			t.Errorf("Count(rows, %d) = %q, want %q", n, got, want)
		}
	}
}

// TestPositions: each index is named by where it sits (one of first,
// last, a unit's first or last, negative) and its bit length, and an
// index right after the previous one is named next.
func TestPositions(t *testing.T) {
	got := Positions("slot", []int64{0, 1, 63, 64, 1<<16 + 5, 1<<17 - 1, -1}, 1<<17, 64)
	want := []string{"slot-bits=0", "slot=first", "slot-bits=1", "slot=next", "slot-bits=6", "slot=unit-last",
		"slot-bits=7", "slot=unit-first", "slot=next", "slot-bits=17", "slot-bits=17", "slot=last", "slot-bits=0", "slot=negative"}
	if !slices.Equal(got, want) {
		t.Errorf("Positions = %q\nwant %q", got, want)
	}
}
