// Package store is the store kernel kind: a batch of rows written into a
// pool's slots, as a CUDA-graph replay sees it.
//
// A Case is one store call: capacity C rows (the batch the graph was
// captured for), the first n of them real, the rest padding whose loc
// entries follow one engine's convention (count, sink, minus1; see
// Padding). Rows are kept as (kind, seed) pairs, not data, so a case stays
// small enough to print and to save as a repro file, and removing a row
// while shrinking leaves every other row's data unchanged.
//
// The pipeline, stage by stage:
//
//  1. Gen draws adversarial cases: slot 0, the last slot, page edges,
//     neighbours of live slots, and stale slots from earlier cases (under
//     count a padded row may point at a slot that now belongs to someone
//     else: the incident). Decode turns fuzz bytes into a case the same
//     way.
//  2. A Target is one plugin attached to an arena of three identical pools,
//     with what the plugin declares for its layout: the geometry, the fp8
//     recipe (applied to the layout it judges by) and the slot width loc is
//     staged at (slots.go).
//     Target.Check runs a case three ways in one round trip — as given,
//     again (determinism), and with only its valid rows (differential) —
//     and hands each run's delta to the oracle. Between runs only the
//     bytes a run changed are put back.
//  3. The Oracle knows, for every pool byte, what a correct kernel leaves
//     there. Inside a valid row's footprint the row is judged by the
//     plugin's declared recipe rather than compared (value.go): a scale
//     within the recipe's ulps and codes that round x over the stored
//     scale pass however the kernel's arithmetic reached them, so only
//     bytes a rule rejects are wrong, and a tolerated one never becomes a
//     padding, stride or alias finding. The wrong bytes are then explained
//     a slot's plane record at a time (package oracle lists the classes):
//     a padded row (its data as the recipe accepts it included), a valid
//     row in another slot or a misread layout accounts for a record only
//     when its bytes are that row's data, never because a byte or two
//     coincide; what no row accounts for gets the record's plain kind
//     (value in a valid footprint). Runs of bytes with one explanation
//     form one violation; a value violation is one rule's finding, saying
//     which rule failed and by how much, and carries its elements decoded.
//  4. Shrink lowers capacity, removes rows (halves, then chunks and trims
//     where halving stalls), and moves slots and padding toward their
//     simplest forms; System hands cases to package property, and turns
//     a crash of the plugin into the case's result.
//  5. Schema is how store reports read: a row per layout × padding, a page
//     map under each failure.
package store
