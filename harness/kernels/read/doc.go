// Package read is the read kernel kind: queries scored against the keys of
// token lists, answered with each request's top k (the sparse indexer's
// read of the index-K cache).
//
// A Case holds the keys the harness writes into their slots (with the
// reference encoder) and the requests: a query and a token list each.
// Target stages the queries and lists, calls the plugin's Read twice, and
// collects its out windows; the Oracle judges the pool (a read is
// read-only: readonly, scratch), the out windows against the reference
// top k (result, score; exact on exact data, within tolerance where keys
// are quantized) and the two runs against each other (determinism).
// Gen, Shrink and Decode draw, reduce and decode cases as the store
// kind's do; Schema is how read reports read.
package read
