package fuzz

import (
	"testing"

	"github.com/kvharness/kvharness/harness/fuzzing/remote"
)

// FuzzTransfer checks decoded transfer cases against the plugin named by
// KVHARNESS_PLUGIN (default pdtransfer; see package fuzzing) in a checker
// process (package remote). Run it with:
//
//	go test -run='^$' -fuzz='^FuzzTransfer$' -fuzztime=30s ./harness/kernels/transfer/fuzz
func FuzzTransfer(f *testing.F) { remote.Fuzz(f, "FuzzTransfer", "../testdata/fuzz/FuzzTransfer") }
