package store

import (
	"strconv"

	"github.com/kvharness/kvharness/harness/oracle"
)

// add puts wrong byte b, explained by e, into the current run of
// violations or starts a new one. A run is one explanation's bytes of one
// slot and field, gaps of up to MergeGap correct bytes included; a value
// run is one finding's bytes however far apart (see near).
func (v *classifier) add(e explanation, u unit, b wrongByte) {
	o, owned := v.ownerAt(b.off)
	r := v.run
	if r != nil && r.Kind == e.kind && r.Row == e.row && r.Slot == u.slot && r.Field == o.Field && r.Tie == e.tie &&
		r.Detail == e.detail && r.Race == e.race && b.off >= r.Off+r.Len && v.near(e.kind, r, b.off) {
		contiguous := b.off == r.Off+r.Len && len(r.Got) == r.Len
		r.Len = b.off + 1 - r.Off
		if contiguous && len(r.Got) < oracle.MaxShown {
			r.Got, r.Want = append(r.Got, b.got), append(r.Want, b.want)
		}
		return
	}
	v.flush()
	v.run = &oracle.Violation{Kind: e.kind, Row: e.row, Slot: u.slot, Page: v.page(u.slot), HasSlot: owned, Field: o.Field,
		Off: b.off, Len: 1, Got: []byte{b.got}, Want: []byte{b.want}, Tie: e.tie, Detail: e.detail, Race: e.race}
}

// near reports whether wrong byte off continues run r: within MergeGap
// of it, or, for a value run, a byte of the same finding however far
// (value.go): one violation per rule broken.
func (v *classifier) near(kind oracle.Kind, r *oracle.Violation, off int) bool {
	if k := v.findingAt(off); kind == oracle.Value && k >= 0 {
		return k == v.findingAt(r.Off)
	}
	return off-(r.Off+r.Len) <= oracle.MergeGap
}

// flush ends the current run, decoding a value run's numbers.
func (v *classifier) flush() {
	if v.run == nil {
		return
	}
	if v.run.Kind == oracle.Value && v.run.Row != oracle.NoRow {
		v.run.Values = v.values(v.run)
	}
	v.out = append(v.out, *v.run)
	v.run = nil
}

func itoa(i int) string     { return strconv.Itoa(i) }
func i64toa(i int64) string { return strconv.FormatInt(i, 10) }
