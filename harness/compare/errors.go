package compare

import "errors"

// ErrNoResults means a file held no benchmark result lines: it is empty,
// or not benchmark output at all.
var ErrNoResults = errors.New("no benchmark results (is this the right file? kvharness bench writes lines starting with \"Benchmark\")")
