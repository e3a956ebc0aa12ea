package fuzz

import (
	"testing"

	"github.com/kvharness/kvharness/harness/fuzzing/remote"
)

// FuzzLoad checks decoded load cases against the plugin named by
// KVHARNESS_PLUGIN (default layerload; see package fuzzing) in a checker
// process (package remote). Run it with:
//
//	go test -run='^$' -fuzz='^FuzzLoad$' -fuzztime=30s ./harness/kernels/load/fuzz
func FuzzLoad(f *testing.F) { remote.Fuzz(f, "FuzzLoad", "../testdata/fuzz/FuzzLoad") }
