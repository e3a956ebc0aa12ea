// Package compare decides whether a nightly benchmark run regressed
// against a baseline: the logic of "kvharness compare BASE NEW".
//
// It reads two Go benchmark files with golang.org/x/perf/benchfmt (as
// written by results.WriteBench, or by go test -bench), groups the values
// by benchmark name and unit, and compares each group with benchmath:
// the median with a confidence interval per side and a Mann–Whitney
// U-test between them. Config lines are not used for grouping, so the
// commit, driver or host may differ between nights; a differing gpu or
// driver is reported as a warning.
//
// A row is a regression only when both hold:
//
//   - the change is significant: p < Alpha (default 0.05), and
//   - it is worse than Threshold (default 5%) in the unit's bad
//     direction: up for times (ns/op, p99-ns/op...; benchfmt tidies them
//     to sec/op, p99-sec/op), down for rates (GB/s, tokens/s).
//
// The direction comes from the files' "Unit ... better=" lines (benchfmt
// unit metadata), then from results.BenchUnits, then from the unit's
// shape (…sec/op lower, …/s higher). A significant change beyond the
// threshold in a unit of unknown direction is "changed", never a
// regression.
//
// The U-test cannot reach p < 0.05 with fewer than 4 values per side
// (its smallest p-value for n1 and n2 values is 2/C(n1+n2, n1)); such
// rows are "insufficient samples", not regressions. results.WriteBench
// writes 10 lines per cell for this reason.
//
// Statistical caveats are warnings on the rows, kept apart from errors.
// Errors are for files that cannot be read; they carry file:line.
package compare
