package mutants

import (
	"slices"
	"testing"
)

// Every mutant gets the final budget, whatever it is; the cheap rounds
// come first only where they are smaller; a survivor of them all gets a
// last, smaller round under stress.
func TestEscalation(t *testing.T) {
	s := survivorStress
	for _, tc := range []struct {
		cases int
		want  []round
	}{
		{10, []round{{10, 0}, {10, s}}},
		{20, []round{{20, 0}, {20, s}}},
		{100, []round{{20, 0}, {100, 0}, {100, s}}},
		{1000, []round{{20, 0}, {200, 0}, {1000, 0}, {survivorCases, s}}},
	} {
		if got := escalation(tc.cases); !slices.Equal(got, tc.want) {
			t.Errorf("escalation(%d) = %v, want %v", tc.cases, got, tc.want)
		}
	}
}
