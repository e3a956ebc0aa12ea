package fuzz

import (
	"testing"

	"github.com/kvharness/kvharness/harness/fuzzing/remote"
)

// FuzzPDAsync checks decoded pdasync cases against the plugin named by
// KVHARNESS_PLUGIN (default pdasync; see package fuzzing) in a checker
// process (package remote). Run it with:
//
//	go test -run='^$' -fuzz='^FuzzPDAsync$' -fuzztime=30s ./harness/kernels/pdasync/fuzz
func FuzzPDAsync(f *testing.F) { remote.Fuzz(f, "FuzzPDAsync", "../testdata/fuzz/FuzzPDAsync") }
