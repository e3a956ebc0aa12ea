// Package benchrun runs a benchmark matrix of one kernel kind: plugins ×
// layouts (or the geometry the kind brings) × tokens × eager/graph ×
// hot/cold × per-launch/batched timing, and records a cell per
// combination the kind can time. The kind (kind.Bench) says which cells a
// unit has and times them; everything else here is the same for every
// kind.
//
// The pipeline:
//
//  1. [Runner.Plan] describes every plugin and lays out the cells, grouped
//     by plugin and layout (one arena serves a group) and split into
//     units — a plugin's layout at one token count, the kind's cells and
//     their copies; a layout's empty launches go with its first unit. A
//     [shard.Spec] keeps the units one machine owns: a unit is never split,
//     so a kernel and the copy it is judged against share a machine.
//  2. [Runner.Run] measures the plan in passes. Each pass starts every
//     plugin afresh and takes one run of each cell; the cells of a group
//     take turns a chunk (one timed call of at most 50 ms) at a time, in
//     an order shuffled per pass, so what the machine does meanwhile falls
//     on many cells' runs alike. A run stops by its share of the cell's
//     criterion (measure.Criterion.PerPass), its clock counting its own
//     chunks. Stores and loads are timed inside the plugin (CUDA events on
//     a GPU, the monotonic clock on a CPU), so no RPC sits inside a timed
//     loop; kinds whose plugins time nothing (reads, transfers, pdasync)
//     are timed by the harness, call by call, beside a floor that shows
//     the call's own cost.
//  3. Each finished run is appended to runs.jsonl and synced before the
//     next: a killed night keeps what it finished, and --resume skips it.
//  4. The runs of a cell become one [results.Cell]: its quantiles over
//     all its samples pooled, its runs kept apart as the replicates a
//     comparison counts, its copy and empty launch measured in the same
//     passes.
//  5. [WriteOutputs] writes cells.jsonl, bench.txt (a line per run),
//     table.txt, night.json ([Manifest]) and the plots; [Merge] joins the
//     outputs of a night's shards, refusing gaps and overlaps.
package benchrun
