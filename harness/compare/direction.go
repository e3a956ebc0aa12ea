package compare

import (
	"strings"

	"github.com/kvharness/kvharness/harness/results"
	"golang.org/x/perf/benchfmt"
	"golang.org/x/perf/benchunit"
)

// direction says which way unit (tidied) is better: -1 lower, +1
// higher, 0 unknown. The units results.WriteBench emits are decided by
// results.BenchUnits, whatever an older file's metadata says (a baseline
// written before copy-ratio stopped being judged still carries
// "better=lower"); other units ask the files' metadata (which also knows
// sec/op and B/s), then the unit's shape.
func direction(units benchfmt.UnitMetadataMap, unit string) int {
	for _, u := range results.BenchUnits {
		if _, tidy := benchunit.Tidy(1, u.Name); tidy == unit {
			return u.Better
		}
	}
	if b := units.GetBetter(unit); b != 0 {
		return b
	}
	switch {
	case strings.HasSuffix(unit, "sec/op"):
		return -1 // a time per operation, such as p99-sec/op
	case strings.HasSuffix(unit, "/s"):
		return +1 // a rate
	}
	return 0
}

// mergeUnits combines the two files' unit metadata; base wins where both
// set a key.
func mergeUnits(base, next benchfmt.UnitMetadataMap) benchfmt.UnitMetadataMap {
	out := benchfmt.UnitMetadataMap{}
	for k, v := range next {
		out[k] = v
	}
	for k, v := range base {
		out[k] = v
	}
	return out
}
