// Package fuzz is the transfer kind's out-of-process fuzz lane: FuzzTransfer, with a
// test binary that links package remote alone, hands each input to a
// kvharness fuzz-check process that checks it as harness/kernels/transfer's
// FuzzTransfer does. Its seeds are the kind's committed corpus; what it finds
// lands in this folder's testdata/fuzz/FuzzTransfer.
package fuzz
