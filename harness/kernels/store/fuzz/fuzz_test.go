package fuzz

import (
	"testing"

	"github.com/kvharness/kvharness/harness/fuzzing/remote"
)

// FuzzStore checks decoded store cases against the plugin named by
// KVHARNESS_PLUGIN (default fusedstore; see package fuzzing) in a checker
// process (package remote). Run it with:
//
//	go test -run='^$' -fuzz='^FuzzStore$' -fuzztime=30s ./harness/kernels/store/fuzz
func FuzzStore(f *testing.F) { remote.Fuzz(f, "FuzzStore", "../testdata/fuzz/FuzzStore") }
