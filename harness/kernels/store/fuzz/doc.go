// Package fuzz is the store kind's out-of-process fuzz lane: FuzzStore,
// with a test binary that links package remote alone, hands each input
// to a kvharness fuzz-check process that checks it as
// harness/kernels/store's FuzzStore does, about twice as many inputs a
// second. Its seeds are the kind's committed corpus; what it finds lands
// in this folder's testdata/fuzz/FuzzStore.
package fuzz
