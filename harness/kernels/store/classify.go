package store

import (
	"strings"

	"github.com/kvharness/kvharness/harness/layout"
	"github.com/kvharness/kvharness/harness/oracle"
	"github.com/kvharness/kvharness/harness/pool"
)

// classify explains the wrong bytes a unit at a time: the wrong bytes of
// one slot's plane record, or a run of bytes no slot owns. A unit's
// candidate explanations are the rows that could have written it — a
// padded row aiming at the slot, a valid row placed by a misreading of
// the layout, another valid row's record — and each fits the bytes that
// are exactly what it would write there. One that accounts for the unit
// (see accounts) explains the bytes it fits; every other byte gets the
// unit's plain kind: value inside a valid row's footprint, alias
// elsewhere in the pool, guard outside it. So a byte is called padding
// only when it is the padded row's byte and the unit shows that row's
// data, never because one byte in 256 happens to match. Two explanations
// that account equally well, or a single byte that two fit, are stated as
// a tie.
func (v *classifier) classify() {
	missing := map[int]bool{}
	for _, u := range v.units() {
		if row := u.bytes[0].row; row != oracle.NoRow && v.untouched[row] && !v.strideAccounts(u) {
			missing[row] = true // reported per plane below, with the whole footprint
			continue
		}
		v.explainUnit(u)
	}
	v.flush()
	for i := range v.sc.Case.Valid {
		if missing[i] {
			v.missing(i)
		}
	}
}

// unit is the wrong bytes one explanation must account for.
type unit struct {
	slot  int64
	plane int
	owned bool // a slot's plane record holds them (perhaps outside the pool)
	bytes []wrongByte
}

// inPool reports whether the unit lies inside the pool.
func (u unit) inPool(poolLen int) bool { return u.bytes[0].off >= 0 && u.bytes[0].off < poolLen }

// units groups the sorted wrong bytes: those of one slot's plane record
// together, and unowned bytes in runs no longer apart than MergeGap.
func (v *classifier) units() []unit {
	var out []unit
	for _, b := range v.wrong {
		o, owned := v.ownerAt(b.off)
		if n := len(out); n > 0 {
			u := &out[n-1]
			last := u.bytes[len(u.bytes)-1].off
			same := owned && u.owned && u.slot == o.Slot && u.plane == o.Plane
			near := !owned && !u.owned && b.off-last <= oracle.MergeGap
			if same || near {
				u.bytes = append(u.bytes, b)
				continue
			}
		}
		out = append(out, unit{slot: o.Slot, plane: o.Plane, owned: owned, bytes: []wrongByte{b}})
	}
	return out
}

// explanation is one account of a unit's bytes.
type explanation struct {
	kind   oracle.Kind
	row    int // the row whose bytes these are, or NoRow
	tie    oracle.Kind
	detail string
	by     string               // who wrote the bytes, for a tie's note: "padded row 3"
	fits   func(wrongByte) bool // nil: fits every byte (a unit's plain kind)
	n      int                  // wrong bytes of the unit it fits
	race   *oracle.Race         // the bytes are one of two writers of the slot (race.go)
	writer int                  // the row whose record it is, for a race: row, but for another valid row's record (otherRow)
}

// accounts says whether an explanation fitting n of a unit's total wrong
// bytes accounts for the unit: at least two bytes (one matches by chance
// one time in 256) and three in four of them (a kernel writes a row's
// record whole).
func accounts(n, total int) bool { return n >= 2 && 4*n >= 3*total }

// explainUnit attributes each byte of u to the explanation that accounts
// for u, or to u's plain kind.
func (v *classifier) explainUnit(u unit) {
	plain := v.plain(u)
	cands := v.candidates(u)
	best := strongest(cands, len(u.bytes))
	if r, ok := v.race(u, cands); ok { // two writers of one slot: named as a race (race.go)
		best = &r
	}
	if best == nil && len(u.bytes) == 1 {
		plain = tieOne(plain, cands)
	}
	for _, b := range u.bytes {
		e := plain
		if best != nil && best.fits(b) {
			e = *best
		}
		if e.kind == oracle.Value {
			e.detail = joinDetail(e.detail, v.findingDetail(b.off)) // the rule it broke (value.go)
		}
		v.add(e, u, b)
	}
}

// strongest is the candidate that accounts for a unit of total wrong bytes and
// fits most of them, with a tie noted where another fits as many; nil
// when none accounts for it.
func strongest(cands []explanation, total int) *explanation {
	var best *explanation
	for i := range cands {
		c := &cands[i]
		if accounts(c.n, total) && (best == nil || c.n > best.n) {
			best = c
		}
	}
	if best == nil {
		return nil
	}
	for _, c := range cands {
		switch {
		case c.n != best.n || c.row == best.row && c.kind == best.kind:
		case c.kind != best.kind && best.tie == "":
			best.tie = c.kind
			best.detail = joinDetail(best.detail, c.by+" would write the same bytes")
		case c.kind == best.kind:
			best.detail = joinDetail(best.detail, c.by+" would write the same bytes")
		}
	}
	return best
}

// tieOne is a single wrong byte's plain explanation, tied with a candidate
// that fits the byte: one byte cannot tell them apart.
func tieOne(plain explanation, cands []explanation) explanation {
	for _, c := range cands {
		if c.n == 1 && c.kind != plain.kind {
			plain.tie = c.kind
			plain.detail = joinDetail(plain.detail, "one byte, which "+c.by+" would also write there")
			return plain
		}
	}
	return plain
}

func joinDetail(a, b string) string {
	switch {
	case a == "":
		return b
	case b == "":
		return a
	}
	return a + "; " + b
}

// candidates are the rows that could have written u's bytes, each with
// the number of u's wrong bytes it fits.
func (v *classifier) candidates(u unit) []explanation {
	var out []explanation
	count := func(e explanation) {
		for _, b := range u.bytes {
			if e.fits(b) {
				e.n++
			}
		}
		if e.n > 0 {
			out = append(out, e)
		}
	}
	inPool := u.inPool(v.sc.Region.Pool.Len)
	if u.owned {
		for _, j := range v.sc.padTarget[u.slot] {
			count(v.paddedRow(u, j, inPool))
		}
		if e, ok := v.otherRow(u, inPool); ok {
			count(e)
		}
		if e, ok := v.strayPadded(u, inPool); ok {
			count(e)
		}
	}
	if v.stride != nil {
		count(v.strideRow(u, inPool))
	}
	return out
}

// paddedRow is padded row j's record written into its target.
func (v *classifier) paddedRow(u unit, j int, inPool bool) explanation {
	sc := v.sc
	rec := sc.record(j)
	e := explanation{kind: oracle.Padding, row: j, writer: j, by: "padded row " + itoa(j), fits: func(b wrongByte) bool {
		x, ok := sc.placed(rec, u.slot, b.off)
		return ok && (x == b.got || v.holdsRow(u.slot, j)) // holdsRow: the row as its recipe accepts it (value.go)
	}}
	switch {
	case !inPool:
		e.kind, e.detail = oracle.Guard, v.guardDetail(u.slot)
	default:
		e.detail = v.paddingDetail(u.slot)
	}
	return e
}

// otherRow is another valid row's whole record in u's slot: a row written
// into a slot not its own (a wrong loc entry, a wrong tile offset).
func (v *classifier) otherRow(u unit, inPool bool) (explanation, bool) {
	sc := v.sc
	sp := sc.Layout.Footprint(u.slot)[u.plane]
	got := v.got(pool.Window{Off: sp.Off, Len: sp.Len})
	k, ok := v.recordIndex(u.plane)[string(got)]
	owner, valid := sc.validSlot[u.slot]
	if !ok || (valid && owner == k) {
		return explanation{}, false
	}
	e := explanation{kind: oracle.Alias, row: k, writer: k, by: "valid row " + itoa(k), fits: func(wrongByte) bool { return true },
		detail: "holds valid row " + itoa(k) + "'s record (slot " + i64toa(sc.Case.Loc[k]) + "'s): a row stored into another slot"}
	switch {
	case !inPool:
		e.kind = oracle.Guard
	case valid:
		e.kind, e.row = oracle.Value, owner
	}
	return e, true
}

// strayPadded is a padded row's whole record in a slot it does not aim
// at: a padded row stored somewhere else (-1 resolved to the last slot,
// a stale slot shifted). Every plane of the slot must hold it: a kernel
// writes a record whole, and one plane alone can match by chance (a
// scale is a bf16 maximum over a constant, so two rows share one often).
func (v *classifier) strayPadded(u unit, inPool bool) (explanation, bool) {
	sc := v.sc
	sp := sc.Layout.Footprint(u.slot)[u.plane]
	got := v.got(pool.Window{Off: sp.Off, Len: sp.Len})
	j, ok := v.paddedIndex(u.plane)[string(got)]
	if !ok || sc.Case.Loc[j] == u.slot || !v.holdsRecord(u.slot, j) {
		return explanation{}, false // none, at its target (paddedRow covers that), or one plane alone
	}
	e := explanation{kind: oracle.Padding, row: j, by: "padded row " + itoa(j), fits: func(wrongByte) bool { return true },
		detail: "holds padded row " + itoa(j) + "'s record: a padded row (" + sc.Case.Padding.String() + " convention, loc " +
			i64toa(sc.Case.Loc[j]) + ") stored into slot " + i64toa(u.slot)}
	if !inPool {
		e.kind = oracle.Guard
	}
	return e, true
}

// holdsRecord reports whether every plane of slot holds row j's record.
func (v *classifier) holdsRecord(slot int64, j int) bool {
	rec := v.sc.record(j)
	for p, sp := range v.sc.Layout.Footprint(slot) {
		if !equalBytes(v.got(pool.Window{Off: sp.Off, Len: sp.Len}), rec[p]) {
			return false
		}
	}
	return true
}

// paddedIndex maps each padded row's record of plane p to the row, built
// on first use.
func (v *classifier) paddedIndex(p int) map[string]int {
	c := v.sc.Case
	return recordsByPlane(&v.padded, p, c.Valid, c.Capacity(), func(j int) []byte { return v.sc.record(j)[p] })
}

// recordIndex maps each valid row's record of plane p to the row, built
// on first use: only a failing case needs it.
func (v *classifier) recordIndex(p int) map[string]int {
	return recordsByPlane(&v.records, p, 0, v.sc.Case.Valid, func(i int) []byte { return v.sc.records[i][p] })
}

// recordsByPlane is (*index)[p], built on first use: the record of each
// row of [from, to) in plane p mapped to the first of those rows that
// holds it.
func recordsByPlane(index *map[int]map[string]int, p, from, to int, record func(row int) []byte) map[string]int {
	if m, ok := (*index)[p]; ok {
		return m
	}
	if *index == nil {
		*index = map[int]map[string]int{}
	}
	m := make(map[string]int, to-from)
	for j := from; j < to; j++ {
		if _, dup := m[string(record(j))]; !dup {
			m[string(record(j))] = j
		}
	}
	(*index)[p] = m
	return m
}

// strideRow is the valid rows as the misreading of the layout places them.
func (v *classifier) strideRow(u unit, inPool bool) explanation {
	e := explanation{kind: oracle.Stride, row: v.stride.rowAt(u.bytes), by: "the layout misread as " + v.stride.name,
		fits:   func(b wrongByte) bool { return v.explains(v.stride, b) },
		detail: "a valid row's bytes laid out as " + v.stride.name}
	if !inPool {
		e.kind = oracle.Guard
	}
	return e
}

// strideAccounts reports whether the layout misreading accounts for u.
func (v *classifier) strideAccounts(u unit) bool {
	if v.stride == nil {
		return false
	}
	n := 0
	for _, b := range u.bytes {
		if v.explains(v.stride, b) {
			n++
		}
	}
	return accounts(n, len(u.bytes))
}

// plain is u's kind when no row's data accounts for it: guard outside the
// pool, value in a valid row's footprint, padding in a slot only padded
// rows aim at (tied with alias: the bytes are no padded row's data),
// alias anywhere else.
func (v *classifier) plain(u unit) explanation {
	sc := v.sc
	e := explanation{kind: oracle.Alias, row: oracle.NoRow}
	owner, valid := sc.validSlot[u.slot]
	padded := sc.padTarget[u.slot]
	switch {
	case !u.inPool(sc.Region.Pool.Len):
		e.kind, e.detail = oracle.Guard, v.guardDetail(u.slot)
		if u.owned && len(padded) > 0 {
			e.row = padded[0]
		}
	case u.owned && valid:
		e.kind, e.row, e.detail = oracle.Value, owner, v.planeDetail(u, owner)
	case u.owned && len(padded) > 0:
		e.kind, e.row, e.tie = oracle.Padding, padded[0], oracle.Alias
		e.detail = "slot " + i64toa(u.slot) + " is the target of padded row " + itoa(padded[0]) + " (" + sc.Case.Padding.String() +
			" convention) and of no valid row, but these bytes are not that row's data"
	case u.owned:
		e.detail = "slot " + i64toa(u.slot) + " belongs to no row of this call"
	default:
		e.detail = "no slot owns these bytes (page padding or past the last slot)"
	}
	return e
}

// planeDetail names what a valid row's wrong plane holds, where a simple
// rule says it: the background (never written), zeros, or the record
// with each element's bytes in the other order.
func (v *classifier) planeDetail(u unit, row int) string {
	sc := v.sc
	sp := sc.Layout.Footprint(u.slot)[u.plane]
	w := pool.Window{Off: sp.Off, Len: sp.Len}
	got, want := v.got(w), sc.records[row][u.plane]
	switch {
	case equalBytes(got, sc.Region.Background(sc.Seed, w.Off, w.Len)):
		return "never written: the record still holds the background"
	case allZero(got):
		return "all zero"
	case swapped(got, want, 2) && v.planeIs(u.plane, layout.KindBF16):
		return "each bf16 element's two bytes swapped (big-endian)"
	case swapped(got, want, 4):
		return "each 4-byte word's bytes reversed (big-endian)"
	}
	return ""
}

// planeIs reports whether every field of plane p has kind k.
func (v *classifier) planeIs(p int, k layout.FieldKind) bool {
	for _, name := range v.sc.Layout.PlaneFields(p) {
		for _, f := range v.sc.Layout.Fields {
			if f.Name == name && f.Kind != k {
				return false
			}
		}
	}
	return true
}

func (v *classifier) guardDetail(slot int64) string {
	return "written outside the pool, where slot " + i64toa(slot) + " would be"
}

func (v *classifier) paddingDetail(slot int64) string {
	d := "a padded row (" + v.sc.Case.Padding.String() + " convention) wrote slot " + i64toa(slot)
	if owner, ok := v.sc.validSlot[slot]; ok {
		d += ", which valid row " + itoa(owner) + " owns"
	}
	return d
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

// ownerAt names the slot, plane and field whose footprint would hold pool
// offset off, also outside the pool (slot -1, slot S) where the layout's
// pattern extends. It returns false for page padding and for slots past
// the last inside the pool.
func (v *classifier) ownerAt(off int) (layout.Owner, bool) {
	l := v.sc.Layout
	if len(l.Regions) > 1 {
		// Regions placed by the pool's pages (vLLM's V pages after every
		// K page): the pool is no repetition of one page.
		if off < 0 {
			return layout.Owner{}, false
		}
		return l.Locate(off, v.sc.Region.Slots)
	}
	page, r := layout.FloorDiv(off, l.PageBytes())
	o, ok := l.Locate(r, l.PageSize)
	if !ok {
		return layout.Owner{}, false
	}
	o.Slot += int64(page) * int64(l.PageSize)
	if off >= 0 && off < v.sc.Region.Pool.Len && o.Slot >= int64(v.sc.Region.Slots) {
		return layout.Owner{Slot: o.Slot}, false
	}
	return o, true
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
	p, _ := layout.FloorDiv(int(slot), v.sc.Layout.PageSize)
	return int64(p)
}

func equalBytes(a, b []byte) bool { return string(a) == string(b) }

func allZero(b []byte) bool {
	for _, x := range b {
		if x != 0 {
			return false
		}
	}
	return true
}

// swapped reports whether got is want with each size-byte element's bytes
// reversed (and the two differ).
func swapped(got, want []byte, size int) bool {
	if len(got) != len(want) || len(got)%size != 0 || equalBytes(got, want) {
		return false
	}
	for i := 0; i < len(got); i += size {
		for k := range size {
			if got[i+k] != want[i+size-1-k] {
				return false
			}
		}
	}
	return true
}
