package report

import (
	"github.com/kvharness/kvharness/harness/oracle"
	"github.com/kvharness/kvharness/harness/property"
)

// ReadJSON builds the machine-readable report of a read suite: JSON's
// shape, the read properties in each verdict, "read" as its padding.
func ReadJSON(h Header, vs []property.Verdict, failures []Failure, runErr error) *JSONReport {
	out := JSON(h, vs, failures, runErr)
	for i, v := range vs {
		props := map[oracle.Kind]string{}
		for _, p := range ReadProperties {
			props[p] = readCell(v.Outcome, p)
		}
		out.Verdicts[i].Properties = props
	}
	return out
}
