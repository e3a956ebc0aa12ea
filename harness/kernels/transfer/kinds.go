package transfer

import "slices"

// Violation kinds of a transfer (prefill → decode page copy). The first
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
	BadDescriptor Kind = "descriptor"
	Overlap       Kind = "overlap"
	Coverage      Kind = "coverage"
	PageMismatch  Kind = "page"
	Outside       Kind = "outside"
	SourceWrite   Kind = "source"
	Checksum      Kind = "checksum"
)

// TransferKinds lists the transfer kinds in report order: causes (the
// descriptors) before symptoms (the bytes), so a shrunk counterexample
// keeps the root cause.
var TransferKinds = []Kind{BadDescriptor, Overlap, Coverage, PageMismatch, Outside, SourceWrite, Checksum}

// The transfer kinds join Kinds ahead of the kinds that compare runs, so a
// transfer that is wrong and also nondeterministic leads with what is wrong
// (and shrinking keeps the root cause).
func init() {
	at := slices.Index(Kinds, Determinism)
	if at < 0 {
		at = len(Kinds)
	}
	Kinds = slices.Insert(Kinds, at, TransferKinds...)
}
