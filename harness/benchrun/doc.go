// Package benchrun runs a benchmark matrix: plugins × layouts × tokens ×
// eager/graph × hot/cold × per-launch/batched timing, and records a cell per
// combination.
//
// Every timing is taken inside the plugin (CUDA events on a GPU, the
// monotonic clock on a CPU) by the Bench RPC, in chunks sized to a fraction
// of a second, so no RPC sits inside a timed loop. A cell samples until
// measure's stopping criterion says which rule ended it. Next to each store
// cell the same run measures a copy of the same bytes (the roofline the
// kernel is judged against) and, per mode, an empty kernel launch (the floor
// for small batches), so every ratio compares numbers taken side by side.
//
// Each finished cell is appended to a JSON Lines log and synced before the
// next starts: a killed run keeps what it finished, and --resume skips it.
package benchrun
