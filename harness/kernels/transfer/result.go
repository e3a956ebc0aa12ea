package transfer

import (
	"github.com/kvharness/kvharness/harness/oracle"
	"github.com/kvharness/kvharness/harness/pd"
)

// Result is the verdict on one transfer case: its violations located by
// room, buffer, page and descriptor, what the plugin answered, and each
// room's digests.
type Result struct {
	oracle.Found[Violation]
	// Descriptors is what the plugin answered on the first run.
	Descriptors []pd.Descriptor
	// Digests is each room's relocation-invariant checksum of each buffer on
	// both sides, as a decode server verifying rooms computes them.
	Digests []pd.RoomDigest
}

// Primary is the kind a report leads with: the first in Kinds order.
func (r *Result) Primary() oracle.Kind { return oracle.First(Kinds, r.Has) }

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
