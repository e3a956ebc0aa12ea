package compare

import (
	"fmt"
	"slices"
	"strings"

	"github.com/kvharness/kvharness/harness/results"
)

// configWarnings reports file config keys that hold one value in each
// file but differ between them, such as gpu or driver, leaving out the
// keys expected to change every night (results.BenchstatIgnore).
func configWarnings(old, next *table) []error {
	volatile := strings.Split(results.BenchstatIgnore, ",")
	var keys []string
	for k := range old.config {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	var out []error
	for _, k := range keys {
		a, b := old.config[k], next.config[k]
		if a == "" || b == "" || a == b || slices.Contains(volatile, k) {
			continue
		}
		out = append(out, fmt.Errorf("config %s differs: %q in %s, %q in %s; the runs may not be comparable", k, a, old.name, b, next.name))
	}
	return out
}
