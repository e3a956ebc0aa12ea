// Package fuzz is the read kind's out-of-process fuzz lane: FuzzRead, with a
// test binary that links package remote alone, hands each input to a
// kvharness fuzz-check process that checks it as harness/kernels/read's
// FuzzRead does. Its seeds are the kind's committed corpus; what it finds
// lands in this folder's testdata/fuzz/FuzzRead.
package fuzz
