// Package oracle decides whether a kernel call did exactly what it should.
//
// Before a call every guard and pool byte holds the seeded background (see
// package pool). After it, the oracle computes what a correct kernel would
// have left — the background, with each valid row's reference encoding in
// its footprint — and compares every changed byte and every valid
// footprint against that. Each wrong byte is classified, most specific
// first:
//
//	guard    it lies in a guard zone (a -1 slot lands here)
//	padding  it lies in a padded row's target and holds that row's data,
//	         or in a target no valid row owns (under sink, slot 0)
//	stride   it holds a valid row's bytes at a place a wrong bytes/token,
//	         page size or plane arrangement explains
//	value    it lies in a valid row's footprint and is wrong
//	missing  a valid row's whole footprint was left untouched
//	alias    anything else: a slot no row of this call targets
//
// Runs of bytes with the same kind and owner form one Violation, carrying
// the row, slot, page, field, offsets and want/got bytes a report prints.
package oracle
