// Package fuzz is the pdasync kind's out-of-process fuzz lane: FuzzPDAsync, with a
// test binary that links package remote alone, hands each input to a
// kvharness fuzz-check process that checks it as harness/kernels/pdasync's
// FuzzPDAsync does. Its seeds are the kind's committed corpus; what it finds
// lands in this folder's testdata/fuzz/FuzzPDAsync.
package fuzz
