package transfer

import "github.com/kvharness/kvharness/harness/oracle"

// oracle.Violation kinds of a transfer (prefill → decode page copy). The first
// three judge the descriptors the plugin answered, the next three the bytes
// the copy left, the last the room as a decode server verifies it:
//
//	descriptor  a descriptor is malformed: length ≠ item_len × run, item_len
//	            ≠ the buffer's real page bytes (fp8's 132·P on a bf16
//	            buffer), an offset outside that buffer's pool on its side or
//	            off a page boundary, run < 1, an unknown room or buffer
//	overlap     two descriptors write the same destination bytes
//	coverage    a room's page of a buffer is not sent exactly once (a buffer
//	            never sent, a run cut short, a page sent twice), or a
//	            descriptor sends a page pairing the room does not have (one
//	            buffer's page table applied to another)
//	page        a destination page does not hold its source page byte for
//	            byte
//	outside     a decode-side byte outside the rooms' destination pages
//	            changed: another page, the pool's tail, a guard, staging
//	source      a prefill-side byte changed: a transfer only reads there
//	checksum    a room's relocation-invariant digest of one buffer differs
//	            between prefill and decode: what a decode server verifying
//	            rooms (sglang #39229) would reject
const (
	BadDescriptor oracle.Kind = "descriptor"
	Overlap       oracle.Kind = "overlap"
	Coverage      oracle.Kind = "coverage"
	PageMismatch  oracle.Kind = "page"
	Outside       oracle.Kind = "outside"
	SourceWrite   oracle.Kind = "source"
	Checksum      oracle.Kind = "checksum"
)

// Kinds lists a transfer's violation kinds in report order: the plugin's
// declared geometry, causes (the descriptors) before symptoms (the
// bytes), so a shrunk counterexample keeps the root cause, and last
// whether two runs agreed: a transfer that is wrong and also
// nondeterministic leads with what is wrong.
var Kinds = []oracle.Kind{oracle.Geometry, BadDescriptor, Overlap, Coverage, PageMismatch, Outside, SourceWrite, Checksum,
	oracle.Determinism}
