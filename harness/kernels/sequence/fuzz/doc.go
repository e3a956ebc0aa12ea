// Package fuzz is the sequence kind's out-of-process fuzz lane:
// FuzzSequence, with a test binary that links package remote alone, hands
// each input to a kvharness fuzz-check process that checks it as
// harness/kernels/sequence's FuzzSequence does. Its seeds are the kind's
// committed corpus; what it finds lands in this folder's
// testdata/fuzz/FuzzSequence.
package fuzz
