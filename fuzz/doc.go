// Package fuzz holds kvharness's fuzz campaigns and the fuzz targets of the
// files it reads.
//
// Each kernel kind's own fuzz target lives in its package, with its seed
// corpus (FuzzStore in harness/kernels/store, FuzzRead in
// harness/kernels/read, FuzzTransfer in harness/kernels/transfer; see
// package fuzzing for the environment they read). The campaigns here run
// go test -fuzz on FuzzStore as CI's fuzz step does: bounded runs against
// the correct plugins must find nothing, and a run against the incident's
// scatter must write a crasher.
//
// The file parsers' targets (repro files, layout files, bench matrices,
// results logs, bench files) check that any input becomes a value or an
// error: never a panic, never a value that fails its own validation.
package fuzz
