package store

import (
	"strings"

	"github.com/kvharness/kvharness/harness/oracle"
	"github.com/kvharness/kvharness/harness/pool"
)

// classify turns wrong bytes into violations: guard, padding, stride (when
// a misreading explains the picture), then value or missing inside valid
// footprints, alias elsewhere.
func (v *classifier) classify() {
	missing := map[int]bool{}
	for _, b := range v.wrong {
		slot, field, owned := v.slotAt(b.off)
		kind, row := oracle.Alias, b.row
		writer, padded := oracle.NoRow, false
		if owned {
			writer, padded = v.padded(slot, b.off, b.got)
		}
		switch {
		case b.off < 0 || b.off >= v.sc.Region.Pool.Len:
			kind = oracle.Guard
		case padded:
			kind, row = oracle.Padding, writer // the padded row that wrote, not the live row it hit
		case v.explains(v.stride, b):
			kind = oracle.Stride
		case b.row != oracle.NoRow && v.untouched[b.row]:
			missing[b.row] = true
			continue
		case b.row != oracle.NoRow:
			kind = oracle.Value
		}
		if row == oracle.NoRow && kind == oracle.Guard {
			if rows := v.sc.padTarget[slot]; owned && len(rows) > 0 {
				row = rows[0]
			}
		}
		v.add(kind, row, slot, owned, field, b.off, b.got, b.want)
	}
	v.flush()
	for i := range v.sc.Case.Valid {
		if missing[i] {
			v.missing(i)
		}
	}
}

// missing reports a valid row whose footprint was never written: one
// violation per plane, so each names its own byte range.
func (v *classifier) missing(row int) {
	sc := v.sc
	slot := sc.Case.Loc[row]
	for p, sp := range sc.Layout.Footprint(slot) {
		got := v.got(pool.Window{Off: sp.Off, Len: sp.Len})
		v.out = append(v.out, oracle.Violation{Kind: oracle.Missing, Row: row, Slot: slot, Page: v.page(slot), HasSlot: true,
			Field: strings.Join(sc.Layout.PlaneFields(p), "+"), Off: sp.Off, Len: sp.Len,
			Want: oracle.Clip(sc.records[row][p]), Got: oracle.Clip(got),
			Detail: "the row's footprint still holds the background: the kernel never wrote it"})
	}
}

// slotAt names the slot whose footprint would hold pool offset off, also
// outside the pool (slot -1, slot S) where the layout's pattern extends.
// It returns false for page padding and for slots past the last inside
// the pool.
func (v *classifier) slotAt(off int) (int64, string, bool) {
	l := v.sc.Layout
	page, r := oracle.FloorDiv(off, l.PageBytes())
	owner, ok := l.Locate(r, l.PageSize)
	if !ok {
		return 0, "", false
	}
	slot := int64(page)*int64(l.PageSize) + owner.Slot
	if off >= 0 && off < v.sc.Region.Pool.Len && slot >= int64(v.sc.Region.Slots) {
		return slot, "", false
	}
	return slot, owner.Field, true
}

// padded reports whether a padded row targeting slot explains byte got at
// off: it does when no valid row owns the slot (nothing else should touch
// it) or when got is the padded row's own data.
//
// It returns the padded row whose data is at off, or, when none matches
// (the slot is no valid row's), the first padded row aiming at the slot.
func (v *classifier) padded(slot int64, off int, got byte) (int, bool) {
	rows := v.sc.padTarget[slot]
	if len(rows) == 0 {
		return oracle.NoRow, false
	}
	for _, i := range rows {
		if b, ok := v.sc.placed(v.sc.record(i), slot, off); ok && (b == got || v.holdsRow(slot, i)) { // holdsRow: value.go
			return i, true
		}
	}
	if _, ok := v.sc.validSlot[slot]; !ok {
		return rows[0], true
	}
	return oracle.NoRow, false
}

// placed returns the byte a record written to slot puts at pool offset off.
func (sc *Oracle) placed(rec [][]byte, slot int64, off int) (byte, bool) {
	for p, sp := range sc.Layout.Footprint(slot) {
		if off >= sp.Off && off < sp.End() {
			return rec[p][off-sp.Off], true
		}
	}
	return 0, false
}

func (v *classifier) page(slot int64) int64 {
	p, _ := oracle.FloorDiv(int(slot), v.sc.Layout.PageSize)
	return int64(p)
}
