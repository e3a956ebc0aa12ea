// Package oracletest holds what the oracle tests of every kernel kind ask
// of a list of violations.
package oracletest

import (
	"testing"

	"github.com/kvharness/kvharness/harness/oracle"
)

// Only asserts that vs holds violations of exactly one kind and returns
// the first.
func Only(t testing.TB, vs []oracle.Violation, kind oracle.Kind) oracle.Violation {
	t.Helper()
	if len(vs) == 0 {
		t.Fatalf("no violations, want %s", kind)
	}
	for _, v := range vs {
		if v.Kind != kind {
			t.Fatalf("got %v, want only %s violations", vs, kind)
		}
	}
	return vs[0]
}
