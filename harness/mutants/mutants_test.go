package mutants

import (
	"slices"
	"testing"
)

// Every mutant gets the final budget, whatever it is; the cheap rounds
// come first only where they are smaller.
func TestEscalation(t *testing.T) {
	for _, tc := range []struct {
		cases int
		want  []int
	}{{10, []int{10}}, {20, []int{20}}, {100, []int{20, 100}}, {1000, []int{20, 200, 1000}}} {
		if got := escalation(tc.cases); !slices.Equal(got, tc.want) {
			t.Errorf("escalation(%d) = %v, want %v", tc.cases, got, tc.want)
		}
	}
}
