// Package compare decides whether a nightly benchmark run regressed
// against a baseline: the logic of "kvharness compare BASE NEW".
//
// It reads two Go benchmark files with golang.org/x/perf/benchfmt (as
// written by results.WriteBench, a line per run, or by go test -bench, a
// line per -count), groups the values by benchmark name (a -N GOMAXPROCS
// suffix dropped, so both writers name a cell alike) and unit, and judges
// each benchmark — a cell — once:
//
//   - on one unit (Options.Metric, the runs' medians by default), with a
//     Mann–Whitney U-test over the two files' runs (benchmath), never over
//     samples: the samples of one run are not independent runs;
//   - slower or faster when the change is significant (p < Alpha), past
//     Threshold (LatencyThreshold for per-launch cells) on its own and net
//     of the drift of the floor measured beside it in the same nights (see
//     drift), and the medians' confidence intervals are apart; same
//     otherwise;
//   - unsure when the runs are too few for the U-test ever to reach Alpha
//     (Cell.Lacks says so; a nightly gate's --strict fails on it, and on a
//     cell of the base the new file lacks), or when it was slower in a
//     night but not in that night's rerun (Report.Confirm).
//
// Every unit is evidence (its change and significance), shown beside the
// verdict. Config lines are not used for grouping, so the commit, driver
// or host may differ between nights; files of different devices or
// configurations (gpu, cpu, clocks, goos, goarch) are refused with a
// *ConfigError unless Options.AllowConfigDiff, a changed driver is a
// warning, and a file kvharness bench wrote before it measured in runs is
// refused (ErrChunked). Errors are for files that cannot be compared; they
// carry file:line.
package compare
