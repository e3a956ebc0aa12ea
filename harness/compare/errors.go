package compare

import "errors"

// ErrNoResults means a file held no benchmark result lines: it is empty,
// or not benchmark output at all.
var ErrNoResults = errors.New("no benchmark results (is this the right file? kvharness bench writes lines starting with \"Benchmark\")")

// ErrChunked means a file was written by kvharness bench before it
// measured in runs: its lines are chunks of one run, which a comparison
// would count as independent runs (pseudo-replication) and call noise
// significant. Measure the night again and replace the file.
var ErrChunked = errors.New("its lines are chunks of one run, written by an older kvharness bench, not runs; a comparison would count them as replicates: measure it again with kvharness bench (for a baseline: copy the new night's bench.txt over it)")
