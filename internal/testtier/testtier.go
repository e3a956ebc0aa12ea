// Package testtier sorts the tests by what they cost, so that the loop a
// developer runs stays short and CI still runs everything:
//
//	go test ./...                    the fast loop: every kind's properties, mutants and goldens
//	go test -short ./...             the same with fewer cases and seeds
//	KVHARNESS_FULL=1 go test ./...   everything, as CI runs it (.ci/run): the mutants
//	                                 tables over every bundled plugin, the fuzz campaigns,
//	                                 the headline properties, runs of many plugin processes
//
// KVHARNESS_LONG=1 is another axis: the issue-scale campaigns (10,000
// cases, ten seeds, longer fuzzing) of the tests that run at all.
package testtier

import (
	"os"
	"testing"
)

// FullEnv is the variable that turns the full suite on.
const FullEnv = "KVHARNESS_FULL"

// Full reports whether the full suite runs: FullEnv set (to anything but
// "0"), and not -short.
func Full() bool {
	v := os.Getenv(FullEnv)
	return v != "" && v != "0" && !testing.Short()
}

// FullOnly skips t outside the full suite, saying what it costs and how to
// run it.
func FullOnly(t testing.TB, cost string) {
	t.Helper()
	if !Full() {
		t.Skipf("%s: runs in the full suite (%s=1 go test ./..., as CI does)", cost, FullEnv)
	}
}
