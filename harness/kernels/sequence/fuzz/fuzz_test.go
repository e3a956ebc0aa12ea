package fuzz

import (
	"testing"

	"github.com/kvharness/kvharness/harness/fuzzing/remote"
)

// FuzzSequence checks decoded sequences against the plugin named by
// KVHARNESS_PLUGIN (default fusedstore; see package fuzzing) in a checker
// process (package remote). Run it with:
//
//	go test -run='^$' -fuzz='^FuzzSequence$' -fuzztime=30s ./harness/kernels/sequence/fuzz
func FuzzSequence(f *testing.F) { remote.Fuzz(f, "FuzzSequence", "../testdata/fuzz/FuzzSequence") }
