package report

import (
	"io"
	"strings"
	"testing"
)

// TestFailureSaysHowItWasConfirmed: the line under a failure's headline
// says whether the first re-run failed the same way, a later one did (the
// case fails only some runs), or none did (flaky).
func TestFailureSaysHowItWasConfirmed(t *testing.T) {
	for _, tc := range []struct {
		f    Failure
		want string
	}{
		{Failure{CaseIndex: 4, Seed: 1, Shrinks: 6, Reruns: 1},
			"  found at case 4 of seed 1, confirmed by a re-run, shrunk in 6 steps to:"},
		{Failure{CaseIndex: 4, Seed: 1, Shrinks: 6, Reruns: 2},
			"  found at case 4 of seed 1, failed again on re-run 2 (re-run 1 passed: it fails only some runs, as a race does), shrunk in 6 steps to:"},
		{Failure{CaseIndex: 1, Seed: 1, Shrinks: 2, Reruns: 3},
			"  found at case 1 of seed 1, failed again on re-run 3 (re-runs 1-2 passed: it fails only some runs, as a race does), shrunk in 2 steps to:"},
		{Failure{CaseIndex: 1, Seed: 1, Flaky: true, Reruns: 4},
			"  case 1 of seed 1 failed once, then passed 4 re-runs; not shrunk"},
		{Failure{CaseIndex: 1, Seed: 1, Flaky: true, Reruns: 1},
			"  case 1 of seed 1 failed once, then passed when re-run; not shrunk"},
		{Failure{CaseIndex: 1, Seed: 1, Flaky: true, Rerun: -1},
			"  case 1 of seed 1 failed once; the plugin faulted when it was re-run; not shrunk"},
	} {
		tc.f.write = func(io.Writer) {}
		var b strings.Builder
		WriteFailure(&b, &tc.f)
		lines := strings.Split(b.String(), "\n")
		if len(lines) < 2 || lines[1] != tc.want {
			t.Errorf("reruns %d, flaky %v: got\n%s\nwant the second line\n%s", tc.f.Reruns, tc.f.Flaky, b.String(), tc.want)
		}
	}
}

// TestWriteCapped: a list of at most the cap prints whole; a longer one
// prints the cap's entries and counts the rest.
func TestWriteCapped(t *testing.T) {
	for _, tc := range []struct {
		n    int
		want string
	}{
		{0, ""},
		{2, "e0\ne1\n"},
		{3, "e0\ne1\ne2\n"},
		{5, "e0\ne1\ne2\n    … 2 more pages\n"},
	} {
		var b strings.Builder
		WriteCapped(&b, tc.n, 3, "more pages", func(i int) { b.WriteString("e" + string(rune('0'+i)) + "\n") })
		if b.String() != tc.want {
			t.Errorf("%d entries, cap 3: got %q, want %q", tc.n, b.String(), tc.want)
		}
	}
}
