// Package fuzz holds kvharness's go test -fuzz targets.
//
// FuzzStore decodes the fuzz input into a store case (workload.Decode: every
// input is a valid case, none is skipped) and checks it against a plugin
// with the same machinery as kvharness check: every byte of three pools and
// their guards is compared with the reference. A violation or a plugin
// fault fails the input, and go test records it as a crasher.
//
// The plugin under test comes from the environment:
//
//	KVHARNESS_PLUGIN     bundled name or path (default fusedstore)
//	KVHARNESS_VARIANT    variant (default none)
//	KVHARNESS_FUZZ_MODE  out-of-process (default) or in-process
//
// Out of process, each fuzz worker starts the real plugin binary once and
// talks to it over gRPC, restarting it after a fault: exactly what a user's
// plugin sees, but the coverage guidance sees only the harness's code. In
// process (bundled Go plugins only), the kernel is linked into the test
// binary and called without gRPC: the fuzzer's coverage then includes the
// kernel's own branches, and it runs several times faster.
package fuzz
