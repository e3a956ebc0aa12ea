package kindtest

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/kvharness/kvharness/harness/kind"
	"github.com/kvharness/kvharness/harness/layout"
	"github.com/kvharness/kvharness/harness/oracle"
	"github.com/kvharness/kvharness/harness/property"
	"github.com/kvharness/kvharness/harness/report"
	"github.com/kvharness/kvharness/harness/workload"
)

// Shrinks fails the test unless every shrink of c is valid against a pool
// of slots and a step down from c by the kind's measure (down(x, c)): a
// shrinker must stay among valid cases and end.
func Shrinks[C interface{ Validate(slots int) error }](t testing.TB, c C, slots int, shrink func(C) []C,
	down func(x, c C) bool) {
	t.Helper()
	for _, x := range shrink(c) {
		if err := x.Validate(slots); err != nil {
			t.Fatalf("a shrink of %v gave invalid %v: %v", c, x, err)
		}
		if !down(x, c) {
			t.Fatalf("a shrink of %v is no smaller: %v", c, x)
		}
	}
}

// JSONRoundTrip is c written as JSON, as a repro file holds it, and read
// back through k's strict Decode against a pool of slots; the caller
// compares it with c.
func JSONRoundTrip(t testing.TB, k *kind.Kind, c workload.Case, slots int) workload.Case {
	t.Helper()
	data, err := json.Marshal(c)
	if err != nil {
		t.Fatal(err)
	}
	back, err := k.Decode(data, slots)
	if err != nil {
		t.Fatalf("%s: %v", data, err)
	}
	return back
}

// SavedAndLoaded saves r as a repro file in a temporary directory, fails
// the test unless the file's name holds each of names, and loads the file
// back through k's decoder: a repro file's round trip. It returns the
// file's path, the repro read back and its layout.
func SavedAndLoaded(t testing.TB, k *kind.Kind, r *report.Repro, names ...string) (string, *report.Repro, *layout.Layout) {
	t.Helper()
	path, err := r.Save(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range names {
		if !strings.Contains(path, n) {
			t.Errorf("repro file name %s: want %q in it", path, n)
		}
	}
	back, l, err := report.LoadRepro(path, k.DecodeRepro)
	if err != nil {
		t.Fatal(err)
	}
	return path, back, l
}

// Replays checks a repro file's case against each variant of fails, check
// checking it on a fresh system of that variant: a variant that must fail
// (fails[v]) fails property want first, the others pass. An error ends
// the test.
func Replays[R property.Result](t testing.TB, fails map[string]bool, want oracle.Kind, check func(variant string) (R, error)) {
	t.Helper()
	for variant, fail := range fails {
		res, err := check(variant)
		if err != nil {
			t.Fatal(err)
		}
		if res.Failed() != fail || (fail && res.Primary() != want) {
			t.Errorf("replay against %q: %+v", variant, res)
		}
	}
}
