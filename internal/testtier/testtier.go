// Package testtier sorts the tests by what they cost, so that the loop a
// developer runs stays short and CI still runs everything:
//
//	go test -short ./...             the quick loop: unit tests, every kind in process, the
//	                                 report goldens, one run through a real plugin process
//	                                 per kind; the other end-to-end runs skip (SkipShort)
//	go test ./...                    the fast loop: every kind's properties, mutants and goldens
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

// SkipShort skips t under -short, saying what it costs and which tier runs
// it: an end-to-end run through plugin processes whose ground the quick
// loop already covers with a smaller run, and the fast loop and CI run.
func SkipShort(t testing.TB, cost string) {
	t.Helper()
	if testing.Short() {
		t.Skipf("%s: skipped under -short; go test ./... runs it", cost)
	}
}

// Pick is a count by tier: short under -short, full in the full suite,
// def in the default loop, so a test sizes its run in one line.
func Pick(short, def, full int) int {
	switch {
	case Full():
		return full
	case testing.Short():
		return short
	}
	return def
}
