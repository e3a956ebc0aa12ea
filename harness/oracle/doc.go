// Package oracle is what every kernel kind's oracle is made of: the
// Violation a report prints (kind, row, slot, page, field, offsets,
// want/got bytes), the Delta a run leaves (its changed windows and their
// bytes, captured from an arena with Capture), the first difference of two
// deltas (Compare: determinism and differential runs), and the kinds every
// kernel shares (geometry, determinism) beside the byte classes a store's
// oracle sorts wrong bytes into:
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
// Each kind's oracle (harness/kernels/...) orders its own kinds; First
// picks the one a report leads with.
package oracle
