// Package report renders what a check run found, for every kernel kind
// alike: a verdict table (a row per suite row, a column per property), the
// first failure in full (the minimal case, each violation with want/got
// bytes), the repro file that replays it, and JSON for machines.
//
// Each kind describes itself once, in a Schema: its table's key columns
// and property columns, its failure headline, how it prints a checked case
// and what its JSON failure carries. Build turns a suite's verdicts into a
// Run through that schema; one text writer, one JSON writer and one
// failure writer read every Run.
//
// Reports contain no timings and no map-ordered output, so the same seed
// gives the same report byte for byte; golden files hold them.
package report
