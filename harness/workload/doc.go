// Package workload defines the cases kvharness runs against kernels and the
// generators that draw them.
//
// A [Store] case is one call of a store kernel as a CUDA-graph replay sees
// it: capacity C rows (the batch the graph was captured for), the first n
// of them real, the rest padding whose loc entries follow one engine's
// convention. Rows are kept as (kind, seed) pairs, not data, so a case
// stays small enough to print and to save as a repro file, and removing a
// row while shrinking leaves every other row's data unchanged.
//
// The generator is adversarial on purpose: it draws slot 0, the last slot,
// page edges, neighbours of live slots, and stale slots from earlier cases
// (under the count convention a padded row may point at a slot that now
// belongs to someone else — the incident). The shrinker removes rows,
// lowers capacity, and moves slots and padding values toward their
// simplest forms, so a failure is reported as the smallest case that
// still shows it.
package workload
