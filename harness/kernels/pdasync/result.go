package pdasync

import "github.com/kvharness/kvharness/harness/oracle"

// Result is the verdict on one case: its violations, and the run's trace:
// every move of the harness and every answer of the two processes, in
// order, as a report prints it.
type Result struct {
	Violations []Violation
	Trace      []string
}

func (r *Result) add(vs ...Violation) { r.Violations = append(r.Violations, vs...) }

// Failed reports whether any invariant was violated.
func (r *Result) Failed() bool { return len(r.Violations) > 0 }

// Has reports whether a violation of kind k was found.
func (r *Result) Has(k oracle.Kind) bool {
	for _, v := range r.Violations {
		if v.Kind == k {
			return true
		}
	}
	return false
}

// Primary is the kind a report leads with: the first in Kinds order.
func (r *Result) Primary() oracle.Kind { return oracle.First(Kinds, r.Has) }

// NumViolations counts the violations.
func (r *Result) NumViolations() int { return len(r.Violations) }

// Generic is the violations in the form every kind's repro files hold.
func (r *Result) Generic() []oracle.Violation {
	out := make([]oracle.Violation, len(r.Violations))
	for i, v := range r.Violations {
		out[i] = v.Generic()
	}
	return out
}
