package workload

import (
	"slices"
	"testing"
)

func TestShrinkSteps(t *testing.T) {
	if got := Without([]int{4, 5, 6}, 1); !slices.Equal(got, []int{4, 6}) {
		t.Errorf("Without = %v, want [4 6]", got)
	}
	if got := Indices(3); !slices.Equal(got, []int{0, 1, 2}) {
		t.Errorf("Indices(3) = %v, want [0 1 2]", got)
	}
	if got := Indices(0); len(got) != 0 {
		t.Errorf("Indices(0) = %v, want none", got)
	}
	odd := func(x int) (int, bool) { return x * 10, x%2 == 1 }
	if got := FilterMap([]int{1, 2, 3}, odd); !slices.Equal(got, []int{10, 30}) {
		t.Errorf("FilterMap = %v, want [10 30]", got)
	}
	if got := FilterMap(nil, odd); got != nil {
		t.Errorf("FilterMap of nothing = %v, want nil", got)
	}
}

// TestEdgeSlot: an even page gives its first slot, an odd one its last,
// and the stream's pick wraps into the pages there are.
func TestEdgeSlot(t *testing.T) {
	for _, tc := range []struct {
		data []byte
		want int64
	}{
		{[]byte{2, 0}, 20},
		{[]byte{3, 0}, 39},
		{[]byte{15, 0}, 59}, // page 15 of 10: page 5
	} {
		if got := NewStream(tc.data).EdgeSlot(100, 10); got != tc.want {
			t.Errorf("EdgeSlot of % x over 100 slots in pages of 10 = %d, want %d", tc.data, got, tc.want)
		}
	}
}
