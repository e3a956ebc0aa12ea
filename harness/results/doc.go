// Package results defines the record of one benchmark cell and the files
// it is kept in.
//
// A [Cell] is one point of the nightly matrix: its [Identity] (plugin,
// layout, tokens, mode, cache, timing...), its runs (a [RunSummary] per
// pass of the night), the [measure.Summary] and chosen quantiles of all
// its samples pooled, derived throughput, the copy roofline measured in
// the same passes, why sampling stopped, and the [Env] it ran in. Raw
// samples are optional.
//
// Records flow through these files, each record naming its schema
// ([CellSchema], [RunSchema]; bench/SCHEMA.md documents the fields):
//
//  1. A JSON Lines journal of runs ([OpenLog], [LogWriter.AppendRun])
//     written while the matrix runs: one [Run] per line, fsynced after
//     each, so a killed night keeps every finished run. [ReadRuns]
//     tolerates a torn final line (a warning, not an error) and returns
//     the finished [RunKey]s so that --resume can skip them. OpenLog cuts
//     a torn line off before appending, so a resumed journal stays valid.
//     [NewCell] assembles a cell from its runs.
//  2. cells.jsonl, the night's cells ([ReadLog] reads it, version 1 cells
//     without runs too).
//  3. A Go benchmark text file ([WriteBench]) that benchstat and
//     kvharness compare read, one result line per run. See bench.go for
//     the unit names.
//  4. Any other report, written with [WriteFileAtomic]: a temporary file
//     in the same directory renamed over the target, so a reader sees the
//     whole file or none of it.
//
// Times are per-launch nanoseconds throughout. In batched timing a sample
// is one batch's time divided by its batch size. Rates are decimal:
// GB/s is 1e9 bytes per second, as GPU peak bandwidth is quoted, and are
// derived from the median (P50) time, which is robust to stray slow
// launches.
package results
