// Package fuzz is the load kind's out-of-process fuzz lane: FuzzLoad, with a
// test binary that links package remote alone, hands each input to a
// kvharness fuzz-check process that checks it as harness/kernels/load's
// FuzzLoad does. Its seeds are the kind's committed corpus; what it finds
// lands in this folder's testdata/fuzz/FuzzLoad.
package fuzz
