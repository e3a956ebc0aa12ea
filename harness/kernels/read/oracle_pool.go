package read

import (
	"fmt"
	"sort"

	"github.com/kvharness/kvharness/harness/layout"
	"github.com/kvharness/kvharness/harness/oracle"
)

// CheckPool judges what a read left in the pool and its guards. The only
// changes from the background may be the harness's own key writes; a
// changed key byte is a readonly violation, any other changed byte a
// scratch violation. d is the run's delta, the key writes included.
func (rc *Oracle) CheckPool(d oracle.Delta) []oracle.Violation {
	want := rc.keyBytes()
	var wrong []readByte
	off := 0
	for _, w := range d.Windows {
		for k := range w.Len {
			at, got := w.Off+k, d.Bytes[off+k]
			if x, ok := want[at]; ok {
				if got != x {
					wrong = append(wrong, readByte{off: at, got: got, want: x, key: true})
				}
				delete(want, at) // judged
				continue
			}
			bg := rc.Region.Background(rc.Seed, at, 1)[0]
			wrong = append(wrong, readByte{off: at, got: got, want: bg})
		}
		off += w.Len
	}
	for at, x := range want { // key bytes the delta does not hold: back to the background
		if bg := rc.Region.Background(rc.Seed, at, 1)[0]; bg != x {
			wrong = append(wrong, readByte{off: at, got: bg, want: x, key: true})
		}
	}
	sort.Slice(wrong, func(i, j int) bool { return wrong[i].off < wrong[j].off })
	return rc.poolRuns(wrong)
}

// readByte is a pool byte a read left wrong; key says whether a key of
// the case occupies it.
type readByte struct {
	off       int
	got, want byte
	key       bool
}

// keyBytes maps every pool offset a key occupies to the byte the harness
// wrote there.
func (rc *Oracle) keyBytes() map[int]byte {
	out := map[int]byte{}
	for _, w := range rc.Writes() {
		for p, sp := range w.Spans {
			for k := range sp.Len {
				out[sp.Off+k] = w.Records[p][k]
			}
		}
	}
	return out
}

// poolRuns groups wrong bytes into violations: a run shares its kind and
// its slot, and may skip a few bytes that happen to be right.
func (rc *Oracle) poolRuns(wrong []readByte) []oracle.Violation {
	var out []oracle.Violation
	var run *oracle.Violation
	for _, b := range wrong {
		kind := Scratch
		if b.key {
			kind = ReadOnly
		}
		slot, field, owned := rc.owned(b.off)
		if run != nil && run.Kind == kind && run.Slot == slot && run.HasSlot == owned && run.Field == field &&
			b.off-(run.Off+run.Len) <= oracle.MergeGap {
			if b.off == run.Off+run.Len && len(run.Got) == run.Len && len(run.Got) < oracle.MaxShown {
				run.Got, run.Want = append(run.Got, b.got), append(run.Want, b.want)
			}
			run.Len = b.off + 1 - run.Off
			continue
		}
		if run != nil {
			out = append(out, *run)
		}
		run = &oracle.Violation{Kind: kind, Row: oracle.NoRow, Slot: slot, HasSlot: owned, Field: field, Off: b.off, Len: 1,
			Got: []byte{b.got}, Want: []byte{b.want}}
		run.Page, _ = pageOf(rc, slot)
	}
	if run != nil {
		out = append(out, *run)
	}
	for i := range out {
		out[i].Detail = rc.poolDetail(out[i])
	}
	return out
}

// owned names the slot and field of a pool offset; guard bytes and page
// padding have none.
func (rc *Oracle) owned(off int) (int64, string, bool) {
	if off < 0 {
		return 0, "guard before", false
	}
	if off >= rc.Region.Pool.Len {
		return 0, "guard after", false
	}
	o, ok := rc.Layout.Locate(off, rc.Region.Slots)
	if !ok {
		return 0, "", false
	}
	return o.Slot, o.Field, true
}

func pageOf(rc *Oracle, slot int64) (int64, int64) {
	p, r := layout.FloorDiv(int(slot), rc.Layout.PageSize)
	return int64(p), int64(r)
}

func (rc *Oracle) poolDetail(v oracle.Violation) string {
	if v.Kind == ReadOnly {
		return fmt.Sprintf("the key the harness wrote into slot %d changed: a read kernel must not write what it reads", v.Slot)
	}
	if !v.HasSlot {
		return "a byte the read had no reason to touch changed (" + orWhat(v.Field, "page padding or past the last slot") + ")"
	}
	return fmt.Sprintf("slot %d holds no key of this case, yet changed: the pool used as scratch space and not restored", v.Slot)
}

func orWhat(s, alt string) string {
	if s == "" {
		return alt
	}
	return s
}

// StagingViolation reports a staging byte range that a read changed and
// should not have: an input (readonly) or a byte outside the inputs and
// out windows (scratch). off counts from the start of the named segment.
func StagingViolation(kind oracle.Kind, segment string, off int, want, got []byte) oracle.Violation {
	what := "an input of the read changed; inputs are read-only"
	if kind == Scratch {
		what = "staging outside the inputs and out windows changed"
	}
	return oracle.Violation{Kind: kind, Row: oracle.NoRow, Field: "staging " + segment, Off: off, Len: max(len(want), len(got)),
		Want: clip(want), Got: clip(got), Detail: fmt.Sprintf("%s (%s, bytes from its start)", what, segment)}
}
