// Package oracle is what every kernel kind's oracle is made of: the
// Violation a report prints (kind, row, slot, page, field, offsets,
// want/got bytes), the Delta a run leaves (its changed windows and their
// bytes, captured from an arena with Capture), the first difference of two
// deltas (Compare: determinism and differential runs), and the kinds every
// kernel shares (geometry, determinism) beside the byte classes a store's
// oracle sorts wrong bytes into:
//
//	guard    it lies in a guard zone (a -1 slot lands here)
//	padding  a padded row's data accounts for it (in the row's target or
//	         stored elsewhere), or it lies in a target no valid row owns
//	         (under sink, slot 0; tied with alias when the bytes are no
//	         padded row's)
//	stride   it holds a valid row's bytes at a place a wrong bytes/token,
//	         page size, plane arrangement or field order explains
//	value    it lies in a valid row's footprint and is wrong
//	missing  a valid row's whole footprint was left untouched
//	alias    anything else: a slot no row of this call targets
//	staging  the kernel wrote into its read-only inputs
//
// A violation whose bytes two explanations fit equally names the second
// as its Tie. Every kind also has crash (the plugin died running the
// case) and sanitizer (compute-sanitizer reported the kernel). Each
// kind's oracle (harness/kernels/...) orders its own kinds; First picks
// the one a report leads with.
package oracle
