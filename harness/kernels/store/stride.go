package store

import (
	"bytes"
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/kvharness/kvharness/harness/layout"
	"github.com/kvharness/kvharness/harness/oracle"
)

// A misreading places a valid row's record where a kernel with a wrong
// idea of the layout would: the spans it writes and the bytes in each.
type misreading struct {
	name  string // the layout the kernel used instead, as in "laid out as NAME"
	place func(slot int64, row int) ([]layout.Span, [][]byte)
}

// misreadings are the geometry mistakes seen in real kernels:
//
//   - bytes per token as an element count (128 for 132-byte fp8 rows or
//     256-byte bf16 rows), or as whatever the plugin declared;
//   - the page stride computed from such a size;
//   - interleaved records written into a packed page, or the reverse;
//   - a record's fields in another order (the scale before the values).
func (sc *Oracle) misreadings() []misreading {
	l := sc.Layout
	var ms []misreading
	for _, b := range distinct(l.HeadDim, 2*l.HeadDim, sc.Declared.BytesPerToken, l.BytesPerToken()) {
		if len(l.Planes) > 1 || b != l.BytesPerToken() {
			ms = append(ms, sc.rowsOf(b))
		}
	}
	for _, pb := range distinct(l.HeadDim*l.PageSize, 2*l.HeadDim*l.PageSize, sc.Declared.PageBytes) {
		if pb != l.PageBytes() {
			ms = append(ms, sc.pagedAs(pb))
		}
	}
	if len(l.Planes) == 1 && len(l.PlaneFields(0)) > 1 {
		if alt, err := l.Rearranged(onePlaneEach(l)); err == nil {
			ms = append(ms, sc.arranged(alt, "a packed page (a plane per field)"))
		}
	}
	if planes, ok := reversedFields(l); ok {
		if alt, err := l.Rearranged(planes); err == nil {
			ms = append(ms, sc.arranged(alt, "records of "+fieldOrder(planes)+" (the fields in another order)"))
		}
	}
	return ms
}

// reversedFields is the layout's planes with each plane's fields in the
// reverse order; false when no plane has two fields.
func reversedFields(l *layout.Layout) ([][]string, bool) {
	var out [][]string
	changed := false
	for i := range l.Planes {
		fs := append([]string(nil), l.PlaneFields(i)...)
		for a, b := 0, len(fs)-1; a < b; a, b = a+1, b-1 {
			fs[a], fs[b] = fs[b], fs[a]
		}
		changed = changed || len(fs) > 1
		out = append(out, fs)
	}
	return out, changed
}

func fieldOrder(planes [][]string) string {
	var parts []string
	for _, p := range planes {
		parts = append(parts, strings.Join(p, ", "))
	}
	return strings.Join(parts, " | ")
}

func distinct(xs ...int) []int {
	var out []int
	for _, x := range xs {
		if x > 0 && !slices.Contains(out, x) {
			out = append(out, x)
		}
	}
	return out
}

func (sc *Oracle) rowsOf(stride int) misreading {
	name := fmt.Sprintf("%d-byte rows (the plugin's declared bytes per token)", stride)
	switch stride {
	case sc.Layout.HeadDim, 2 * sc.Layout.HeadDim:
		name = fmt.Sprintf("%d-byte rows (bytes per token as an element count)", stride)
	case sc.Layout.BytesPerToken():
		name = fmt.Sprintf("interleaved %d-byte records (rows, not packed pages)", stride)
	}
	return misreading{name: name, place: func(slot int64, row int) ([]layout.Span, [][]byte) {
		rec := bytes.Join(sc.records[row], nil)
		return []layout.Span{{Off: int(slot) * stride, Len: len(rec)}}, [][]byte{rec}
	}}
}

func (sc *Oracle) pagedAs(pageBytes int) misreading {
	return misreading{name: fmt.Sprintf("%d-byte pages", pageBytes), place: func(slot int64, row int) ([]layout.Span, [][]byte) {
		return sc.Layout.FootprintPaged(slot, pageBytes), sc.records[row]
	}}
}

func (sc *Oracle) arranged(alt *layout.Layout, name string) misreading {
	return misreading{name: name, place: func(slot int64, row int) ([]layout.Span, [][]byte) {
		return alt.Footprint(slot), alt.EncodeWith(sc.rows[row], sc.Inputs)
	}}
}

func onePlaneEach(l *layout.Layout) [][]string {
	var out [][]string
	for _, n := range l.PlaneFields(0) {
		out = append(out, []string{n})
	}
	return out
}

// misread is the pool a kernel following one misreading would leave: the
// bytes its valid rows put at each offset (the last row wins), and which
// row put each.
type misread struct {
	name   string
	placed map[int]byte
	row    map[int]int
}

// place is the misread pool at the offsets at (sorted, distinct): the
// wrong bytes, all a classifier asks about. A case's valid rows hold far
// more bytes than it got wrong, so only those are recorded.
func (sc *Oracle) place(m misreading, at []int) *misread {
	r := &misread{name: m.name, placed: map[int]byte{}, row: map[int]int{}}
	if len(at) == 0 {
		return r
	}
	for i := range sc.Case.Valid {
		spans, recs := m.place(sc.Case.Loc[i], i)
		for k, sp := range spans {
			for j := sort.SearchInts(at, sp.Off); j < len(at) && at[j] < sp.Off+sp.Len; j++ {
				r.placed[at[j]] = recs[k][at[j]-sp.Off]
				r.row[at[j]] = i
			}
		}
	}
	return r
}

// offsets is the distinct offsets of bs, sorted.
func offsets(bs []wrongByte) []int {
	at := make([]int, len(bs))
	for i, b := range bs {
		at[i] = b.off
	}
	slices.Sort(at)
	return slices.Compact(at)
}

// rowAt is the valid row the misreading puts at the first of bs that it
// places, or NoRow.
func (r *misread) rowAt(bs []wrongByte) int {
	for _, b := range bs {
		if i, ok := r.row[b.off]; ok {
			return i
		}
	}
	return oracle.NoRow
}

// explains reports whether the misread pool holds b's observed byte:
// either a misplaced row's byte, or the background where the misreading
// leaves a true footprint unwritten.
func (v *classifier) explains(r *misread, b wrongByte) bool {
	if r == nil {
		return false
	}
	if x, ok := r.placed[b.off]; ok {
		return x == b.got
	}
	return v.isBackground(b)
}

// explain picks the misreading that accounts for the most wrong bytes. It
// is kept only if it explains at least half of them and at least a
// quarter of them are misplaced row data, not merely unwritten
// background: a value bug must not pass for a stride bug because a few
// bytes coincide, nor dropped rows (whose footprints hold the background
// a misreading would leave there too) because a few dozen of their
// thousands of bytes do.
func (v *classifier) explain() {
	best, bestN := (*misread)(nil), 0
	at := offsets(v.wrong)
	for _, m := range v.sc.misreadings() {
		r := v.sc.place(m, at)
		n, placed := 0, 0
		for _, b := range v.wrong {
			if v.explains(r, b) {
				n++
				if _, ok := r.placed[b.off]; ok {
					placed++
				}
			}
		}
		if placed >= 4 && 4*placed >= len(v.wrong) && 2*n >= len(v.wrong) && n > bestN {
			best, bestN = r, n
		}
	}
	v.stride = best
}

// isBackground reports whether a wrong byte still holds the background.
func (v *classifier) isBackground(b wrongByte) bool {
	return v.sc.Region.Background(v.sc.Seed, b.off, 1)[0] == b.got
}
