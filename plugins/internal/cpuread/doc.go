// Package cpuread is the bundled plugins' CPU read kernel: decode the keys
// of a request's token list from a pool, score them against the query in
// float32 as a GPU kernel does, and keep the top k.
//
// It is written from the plugins' side of the contract, without the
// harness's reference: keys are found through the plugin's own
// cpustore.Geometry and e4m3 codes are decoded by bit manipulation (the
// harness decodes through a table built from the format's definition), so
// the two do not share a mistake. A plugin decides which tokens a request
// reads and what else it does (its mutants); this package only does what
// it is told.
package cpuread
