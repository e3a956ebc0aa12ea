// Package shard splits a run into n deterministic parts, so that n machines
// (a CI matrix, a Kubernetes Indexed Job) can each take one and the parts
// joined give back the whole run.
//
// A [Spec] is "i/n": part i of n, counted from 1, as CI matrices and
// people count. The whole run is 1/1, the zero Spec's meaning too. Work is
// split by position in a canonical order, not by hashing: item k of the
// order belongs to part k mod n + 1. So the parts differ in size by at most
// one item, every item has exactly one owner, and the split depends only on
// the order and n — never on the machine, the time or a map's iteration.
//
// The caller supplies the canonical order. [Select] makes one from keys
// (sorted, so two machines that list the same items in another order still
// agree), and refuses duplicate keys, which would give one item two owners.
// [Spec.Owns] serves callers that already number their work, such as fuzz
// seeds 0..N-1.
//
// The same splitter serves kvharness bench (units of plugin × layout ×
// tokens), check (layout × padding rows) and fuzz (seeds).
package shard
