package store

import (
	"bytes"
	"fmt"
	"runtime"
	"sort"
	"strings"
	"sync"

	"github.com/kvharness/kvharness/harness/layout"
	"github.com/kvharness/kvharness/harness/oracle"
	"github.com/kvharness/kvharness/harness/pool"
)

// Oracle is everything the oracle knows about one store case on one
// pool. Build it once per case; Check it after every run of that case.
type Oracle struct {
	Layout   *layout.Layout
	Region   pool.Region
	Seed     uint64
	Case     *Case
	Declared oracle.Declared

	rows      [][]uint16      // input data, per row
	records   [][][]byte      // reference encoding, per row (padded rows lazily)
	validSlot map[int64]int   // slot → valid row
	padTarget map[int64][]int // slot → padded rows pointing at it
}

// NewOracle encodes the case's rows with the reference encoder.
func NewOracle(l *layout.Layout, r pool.Region, seed uint64, c *Case, d oracle.Declared) *Oracle {
	sc := &Oracle{Layout: l, Region: r, Seed: seed, Case: c, Declared: d,
		rows: make([][]uint16, c.Capacity()), records: make([][][]byte, c.Capacity()),
		validSlot: make(map[int64]int, c.Valid), padTarget: map[int64][]int{}}
	sc.prepare()
	for i := range c.Capacity() {
		if i < c.Valid {
			sc.validSlot[c.Loc[i]] = i
		} else {
			sc.padTarget[c.Loc[i]] = append(sc.padTarget[c.Loc[i]], i)
		}
	}
	return sc
}

// prepareChunk rows are drawn and encoded per goroutine: a large batch's
// rows are the harness's largest cost per case, and independent.
const prepareChunk = 32

// prepare draws every row and encodes the valid ones, spread over the CPUs.
func (sc *Oracle) prepare() {
	c, l := sc.Case, sc.Layout
	do := func(lo, hi int) {
		for i := lo; i < hi; i++ {
			sc.rows[i] = c.Rows[i].Data(l.HeadDim)
			if i < c.Valid {
				sc.records[i] = l.Encode(sc.rows[i])
			}
		}
	}
	n := c.Capacity()
	if n <= prepareChunk || runtime.GOMAXPROCS(0) == 1 {
		do(0, n)
		return
	}
	var wg sync.WaitGroup
	for lo := 0; lo < n; lo += prepareChunk {
		wg.Go(func() { do(lo, min(lo+prepareChunk, n)) })
	}
	wg.Wait()
}

// Rows returns the input rows as bf16 bit patterns, row-major, for staging.
func (sc *Oracle) Rows() [][]uint16 { return sc.rows }

func (sc *Oracle) record(i int) [][]byte {
	if sc.records[i] == nil {
		sc.records[i] = sc.Layout.Encode(sc.rows[i])
	}
	return sc.records[i]
}

// Outcome is the verdict on one run.
type Outcome struct {
	Violations []oracle.Violation
	Delta      oracle.Delta
}

// Check classifies every wrong byte a run left, given its delta.
func (sc *Oracle) Check(d oracle.Delta) []oracle.Violation {
	v := &classifier{sc: sc, delta: d, untouched: map[int]bool{}}
	covered := v.collectValid()
	v.collectRest(covered)
	if len(v.wrong) == 0 {
		return nil
	}
	sort.SliceStable(v.wrong, func(i, j int) bool { return v.wrong[i].off < v.wrong[j].off })
	v.explain()
	v.classify()
	return v.out
}

// wrongByte is one pool byte whose content differs from a correct run's.
type wrongByte struct {
	off       int // from the pool base
	got, want byte
	row       int // valid row whose footprint holds it, or NoRow
}

type classifier struct {
	sc        *Oracle
	delta     oracle.Delta
	wrong     []wrongByte
	untouched map[int]bool // valid rows whose footprint kept the background
	stride    *misread     // the misreading that explains the wrong bytes, if one does
	out       []oracle.Violation
	run       *oracle.Violation
}

// got returns the bytes of window w (pool offsets) after the run.
func (v *classifier) got(w pool.Window) []byte {
	out := v.sc.Region.Background(v.sc.Seed, w.Off, w.Len)
	ws := v.delta.Windows
	i := sort.Search(len(ws), func(i int) bool { return ws[i].End() > w.Off })
	start := 0
	for j := 0; j < i; j++ {
		start += ws[j].Len
	}
	for ; i < len(ws) && ws[i].Off < w.End(); i++ {
		lo, hi := max(ws[i].Off, w.Off), min(ws[i].End(), w.End())
		copy(out[lo-w.Off:hi-w.Off], v.delta.Bytes[start+lo-ws[i].Off:])
		start += ws[i].Len
	}
	return out
}

// collectValid compares every valid row's footprint with its encoding and
// returns the footprints, sorted.
func (v *classifier) collectValid() []pool.Window {
	sc := v.sc
	covered := make([]pool.Window, 0, sc.Case.Valid*len(sc.Layout.Planes))
	for i := range sc.Case.Valid {
		rec := sc.records[i]
		untouched := true
		var wrong []wrongByte
		for p, sp := range sc.Layout.Footprint(sc.Case.Loc[i]) {
			w := pool.Window{Off: sp.Off, Len: sp.Len}
			covered = append(covered, w)
			got := v.got(w)
			if bytes.Equal(got, rec[p]) {
				untouched = false
				continue
			}
			untouched = untouched && bytes.Equal(got, sc.Region.Background(sc.Seed, w.Off, w.Len))
			for k := range sp.Len {
				if got[k] != rec[p][k] {
					wrong = append(wrong, wrongByte{sp.Off + k, got[k], rec[p][k], i})
				}
			}
		}
		if len(wrong) > 0 {
			v.wrong = append(v.wrong, wrong...)
			v.untouched[i] = untouched
		}
	}
	sort.Slice(covered, func(a, b int) bool { return covered[a].Off < covered[b].Off })
	return covered
}

// collectRest adds changed bytes outside valid footprints: a correct
// kernel changes none. Both lists are sorted, so one merge walk finds them.
func (v *classifier) collectRest(covered []pool.Window) {
	off, c := 0, 0
	for _, w := range v.delta.Windows {
		for a := w.Off; a < w.End(); {
			for c < len(covered) && covered[c].End() <= a {
				c++
			}
			if c < len(covered) && covered[c].Off <= a {
				a = min(covered[c].End(), w.End())
				continue
			}
			hi := w.End()
			if c < len(covered) {
				hi = min(hi, covered[c].Off)
			}
			bg := v.sc.Region.Background(v.sc.Seed, a, hi-a)
			for k := a; k < hi; k++ {
				v.wrong = append(v.wrong, wrongByte{k, v.delta.Bytes[off+k-w.Off], bg[k-a], oracle.NoRow})
			}
			a = hi
		}
		off += w.Len
	}
}

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
		if b, ok := v.sc.placed(v.sc.record(i), slot, off); ok && b == got {
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

// add extends the current run or starts a new one.
func (v *classifier) add(kind oracle.Kind, row int, slot int64, hasSlot bool, field string, off int, got, want byte) {
	r := v.run
	if r != nil && r.Kind == kind && r.Row == row && r.Slot == slot && r.Field == field &&
		off >= r.Off+r.Len && off-(r.Off+r.Len) <= oracle.MergeGap {
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
	}
	return ""
}
