// Package workload is what the cases of every kernel kind are made of: the
// Case interface reports and repro files handle, input rows kept as (kind,
// seed) pairs so a case stays small enough to print and save, and the byte
// stream fuzz targets decode cases from.
//
// Each kind's case, generator and shrinker live in its own package
// (harness/kernels/store, read, transfer).
package workload
