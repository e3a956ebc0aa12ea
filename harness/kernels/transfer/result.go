package transfer

import "github.com/kvharness/kvharness/harness/oracle"

// Result is the verdict on one transfer case: its violations located by
// room, buffer, page and descriptor, what the plugin answered, and each
// room's digests.
type Result struct {
	Violations []Violation
	// Descriptors is what the plugin answered on the first run.
	Descriptors []Descriptor
	// Digests is each room's relocation-invariant checksum of each buffer on
	// both sides, as a decode server verifying rooms computes them.
	Digests []RoomDigest
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

// Rejected lists the rooms a decode server checking digests would reject.
func (r *Result) Rejected() []int {
	var out []int
	for _, d := range r.Digests {
		if !d.Match() && (len(out) == 0 || out[len(out)-1] != d.Room) {
			out = append(out, d.Room)
		}
	}
	return out
}
