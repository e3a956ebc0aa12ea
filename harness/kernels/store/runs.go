package store

import (
	"fmt"

	"github.com/kvharness/kvharness/harness/oracle"
)

// add extends the current run or starts a new one.
func (v *classifier) add(kind oracle.Kind, row int, slot int64, hasSlot bool, field string, off int, got, want byte) {
	r := v.run
	if r != nil && r.Kind == kind && r.Row == row && r.Slot == slot && r.Field == field && off >= r.Off+r.Len &&
		v.near(kind, r, off) {
		contiguous := off == r.Off+r.Len && len(r.Got) == r.Len
		r.Len = off + 1 - r.Off
		if contiguous && len(r.Got) < oracle.MaxShown {
			r.Got, r.Want = append(r.Got, got), append(r.Want, want)
		}
		return
	}
	v.flush()
	v.run = &oracle.Violation{Kind: kind, Row: row, Slot: slot, Page: v.page(slot), HasSlot: hasSlot, Field: field,
		Off: off, Len: 1, Got: []byte{got}, Want: []byte{want}}
}

// near reports whether wrong byte off continues run r: within MergeGap
// of it, or, for a value run, a byte of the same finding however far
// (value.go): one violation per rule broken.
func (v *classifier) near(kind oracle.Kind, r *oracle.Violation, off int) bool {
	if kind == oracle.Value {
		return v.findingAt(off) == v.findingAt(r.Off)
	}
	return off-(r.Off+r.Len) <= oracle.MergeGap
}

func (v *classifier) flush() {
	if v.run != nil {
		v.run.Detail = v.detail(v.run)
		v.out = append(v.out, *v.run)
		v.run = nil
	}
}

func (v *classifier) detail(r *oracle.Violation) string {
	switch r.Kind {
	case oracle.Guard:
		return fmt.Sprintf("written outside the pool, where slot %d would be", r.Slot)
	case oracle.Padding:
		return fmt.Sprintf("a padded row (%s convention) wrote slot %d", v.sc.Case.Padding, r.Slot)
	case oracle.Stride:
		return "a valid row's bytes at an offset a wrong bytes/token or page layout explains"
	case oracle.Alias:
		if !r.HasSlot {
			return "no slot owns these bytes (page padding or past the last slot)"
		}
		return fmt.Sprintf("slot %d belongs to no row of this call", r.Slot)
	case oracle.Value:
		return v.valueDetail(r) // which rule failed and by how much (value.go)
	}
	return ""
}
