package fuzz

import (
	"testing"

	"github.com/kvharness/kvharness/harness/fuzzing/remote"
)

// FuzzRead checks decoded read cases against the plugin named by
// KVHARNESS_PLUGIN (default fusedstore; see package fuzzing) in a checker
// process (package remote). Run it with:
//
//	go test -run='^$' -fuzz='^FuzzRead$' -fuzztime=30s ./harness/kernels/read/fuzz
func FuzzRead(f *testing.F) { remote.Fuzz(f, "FuzzRead", "../testdata/fuzz/FuzzRead") }
