package pdasync

import "github.com/kvharness/kvharness/harness/oracle"

// Result is the verdict on one case: its violations, and the run's trace:
// every move of the harness and every answer of the two processes, in
// order, as a report prints it.
type Result struct {
	oracle.Found[Violation]
	Trace []string
}

// Primary is the kind a report leads with: the first in Kinds order.
func (r *Result) Primary() oracle.Kind { return oracle.First(Kinds, r.Has) }
