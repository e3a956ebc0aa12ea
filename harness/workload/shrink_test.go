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
