package property

import (
	"context"
	"slices"
	"testing"
)

type noTarget struct{}

func (noTarget) Close(context.Context) {}

// TestJobsTakeCostliestFirst: jobs take a suite's rows by Cost, highest
// first, rows of equal cost in their order, and a shard's rows among
// themselves the same way; positions count in the rows run.
func TestJobsTakeCostliestFirst(t *testing.T) {
	s := &Suite[noTarget, int64, fakeResult]{}
	for _, c := range []float64{1, 5, 0, 5, 3} {
		s.Rows = append(s.Rows, Row[noTarget, int64, fakeResult]{Cost: c})
	}
	for _, tc := range []struct{ rows, want []int }{
		{[]int{0, 1, 2, 3, 4}, []int{1, 3, 4, 0, 2}},
		{[]int{0, 2, 3}, []int{2, 0, 1}}, // a shard: costs 1, 0, 5
		{[]int{2, 0}, []int{1, 0}},
	} {
		if got := s.costliestFirst(tc.rows); !slices.Equal(got, tc.want) {
			t.Errorf("rows %v (costs by row %v): order %v, want %v", tc.rows, []float64{1, 5, 0, 5, 3}, got, tc.want)
		}
	}
}
