// Package remote is the out-of-process lane of a kernel kind's fuzz
// target: the go test -fuzz worker decodes nothing and checks nothing; it
// hands each input to a checker process and fails the input when the
// checker says so.
//
// Why: for every input, go test -fuzz resets, copies and compares every
// coverage counter of the test binary, and a kind's own test binary links
// gRPC, protobuf, go-plugin and the whole harness, some 120,000 counters.
// On two cores that bookkeeping alone holds a worker to about 4,700
// inputs a second with a target that does nothing; a checked store case
// costs about as much again. This package links the standard library and
// the doorbell alone (a test binary of it has a few thousand counters),
// so the worker's share of an input is tens of microseconds.
//
// The checker is `kvharness fuzz-check TARGET`, built from the source
// tree into the user cache (package gobuild) or named by
// KVHARNESS_FUZZ_CHECKER. It opens the kind's fuzz target exactly as the
// in-binary lane does (package fuzzing: the plugin KVHARNESS_PLUGIN names,
// KVHARNESS_VARIANT, KVHARNESS_FUZZ_MODE) and answers each input over a
// doorbell (package doorbell) in a memfd the worker creates and passes as
// the checker's file descriptor 3: a pass with the case's features, or
// the crasher's message, the same words the in-binary lane prints.
//
// Coverage guidance: the harness's branches run in the checker, where go
// test -fuzz cannot count them. In their place the checker names what
// each case chose (fuzzing.Target.Features: its padding, its row counts,
// where its slots sit), and the worker runs a basic block per feature
// (cover.go), so an input whose case names a feature, or names it more
// often, than any before is kept as interesting. The kind's own package
// keeps the in-binary lane, whose coverage is the harness's code (and, in
// process, the kernel's).
package remote

//go:generate go run gen_cover.go
