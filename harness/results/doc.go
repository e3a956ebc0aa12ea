// Package results defines the record of one benchmark cell and the files
// it is kept in.
//
// A [Cell] is one point of the nightly matrix: its [Identity] (plugin,
// layout, tokens, mode, cache, timing...), the [measure.Summary] of its
// per-launch times, derived throughput, the copy roofline measured in the
// same run, why sampling stopped, and the [Env] it ran in. Raw samples are
// optional.
//
// Cells flow through three files:
//
//  1. A JSON Lines log ([OpenLog], [LogWriter.Append]) written while the
//     matrix runs: one cell per line, fsynced after each, so a killed run
//     keeps every finished cell. [ReadLog] tolerates a torn final line
//     (a warning, not an error) and returns the set of finished [Key]s so
//     that --resume can skip them. OpenLog cuts a torn line off before
//     appending, so a resumed log stays valid.
//  2. A Go benchmark text file ([WriteBench]) that benchstat and
//     kvharness compare read. See bench.go for the unit names and why each
//     cell becomes several result lines.
//  3. Any other report, written with [WriteFileAtomic]: a temporary file
//     in the same directory renamed over the target, so a reader sees the
//     whole file or none of it.
//
// Times are per-launch nanoseconds throughout. In batched timing a sample
// is one batch's time divided by its batch size. Rates are decimal:
// GB/s is 1e9 bytes per second, as GPU peak bandwidth is quoted, and are
// derived from the median (P50) time, which is robust to stray slow
// launches.
package results
