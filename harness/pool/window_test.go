package pool

import (
	"slices"
	"testing"
)

// TestIntersect: the parts of a window inside backed windows, in their
// order; nothing where none meets it, and touching is not meeting.
func TestIntersect(t *testing.T) {
	backed := []Window{{0, 10}, {20, 10}, {40, 5}}
	for _, c := range []struct {
		w    Window
		want []Window
	}{
		{Window{5, 20}, []Window{{5, 5}, {20, 5}}},
		{Window{10, 10}, nil},
		{Window{0, 100}, backed},
		{Window{42, 1}, []Window{{42, 1}}},
		{Window{45, 3}, nil},
	} {
		if got := Intersect(backed, c.w); !slices.Equal(got, c.want) {
			t.Errorf("Intersect(%v, %v) = %v; want %v", backed, c.w, got, c.want)
		}
	}
}
