package transfer

import (
	"github.com/kvharness/kvharness/harness/oracle"
)

// TransferResult is the verdict on one transfer case. Its Result holds the
// generic violations property runs, reports and repro files handle; the
// rest keeps what only a transfer has.
type TransferResult struct {
	Result
	// Transfer holds the same violations as Result.Violations, in the same
	// order, with their room, buffer, pages and descriptor as fields.
	Transfer []oracle.TransferViolation
	// Descriptors is what the plugin answered on the first run.
	Descriptors []oracle.Descriptor
	// Digests is each room's relocation-invariant checksum of each buffer on
	// both sides, as a decode server verifying rooms computes them.
	Digests []oracle.RoomDigest
}

func (r *TransferResult) add(vs ...oracle.TransferViolation) {
	for _, v := range vs {
		r.Transfer = append(r.Transfer, v)
		r.Violations = append(r.Violations, v.Violation())
	}
}

// Rejected lists the rooms a decode server checking digests would reject.
func (r *TransferResult) Rejected() []int {
	var out []int
	for _, d := range r.Digests {
		if !d.Match() && (len(out) == 0 || out[len(out)-1] != d.Room) {
			out = append(out, d.Room)
		}
	}
	return out
}
