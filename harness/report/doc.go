// Package report renders what the harness found: a verdict table per
// plugin, the first failure in full (the minimal case, each violation with
// its kind, row, slot, page and want/got bytes, a page map), the repro file
// that replays it, and JSON for machines.
//
// Reports contain no timings and no map-ordered output, so the same seed
// gives the same report byte for byte; golden files hold them.
package report
