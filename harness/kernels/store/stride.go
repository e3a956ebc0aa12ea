package store

import (
	"bytes"

	"github.com/kvharness/kvharness/harness/layout"
)

// A misreading places a valid row's record where a kernel with a wrong
// idea of the layout would: the spans it writes and the bytes in each.
type misreading func(slot int64, row int) ([]layout.Span, [][]byte)

// misreadings are the geometry mistakes seen in real kernels:
//
//   - bytes per token as an element count (128 for 132-byte fp8 rows or
//     256-byte bf16 rows), or as whatever the plugin declared;
//   - the page stride computed from such a size;
//   - interleaved records written into a packed page, or the reverse.
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
			ms = append(ms, sc.arranged(alt))
		}
	}
	return ms
}

func distinct(xs ...int) []int {
	var out []int
	for _, x := range xs {
		if x > 0 && !contains(out, x) {
			out = append(out, x)
		}
	}
	return out
}

func contains(xs []int, x int) bool {
	for _, y := range xs {
		if y == x {
			return true
		}
	}
	return false
}

func (sc *Oracle) rowsOf(stride int) misreading {
	return func(slot int64, row int) ([]layout.Span, [][]byte) {
		rec := bytes.Join(sc.records[row], nil)
		return []layout.Span{{Off: int(slot) * stride, Len: len(rec)}}, [][]byte{rec}
	}
}

func (sc *Oracle) pagedAs(pageBytes int) misreading {
	return func(slot int64, row int) ([]layout.Span, [][]byte) {
		return sc.Layout.FootprintPaged(slot, pageBytes), sc.records[row]
	}
}

func (sc *Oracle) arranged(alt *layout.Layout) misreading {
	return func(slot int64, row int) ([]layout.Span, [][]byte) {
		return alt.Footprint(slot), alt.Encode(sc.rows[row])
	}
}

func onePlaneEach(l *layout.Layout) [][]string {
	var out [][]string
	for _, n := range l.PlaneFields(0) {
		out = append(out, []string{n})
	}
	return out
}

// misread is the pool a kernel following one misreading would leave: the
// bytes its valid rows put at each offset (the last row wins).
type misread struct{ placed map[int]byte }

func (sc *Oracle) place(m misreading) *misread {
	r := &misread{placed: map[int]byte{}}
	for i := range sc.Case.Valid {
		spans, recs := m(sc.Case.Loc[i], i)
		for k, sp := range spans {
			for j := range sp.Len {
				r.placed[sp.Off+j] = recs[k][j]
			}
		}
	}
	return r
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
// is kept only if it explains at least half of them and the wrong bytes
// hold misplaced row data, not merely unwritten background: a value bug
// must not pass for a stride bug because a few bytes coincide.
func (v *classifier) explain() {
	best, bestN := (*misread)(nil), 0
	for _, m := range v.sc.misreadings() {
		r := v.sc.place(m)
		n, placed := 0, 0
		for _, b := range v.wrong {
			if v.explains(r, b) {
				n++
				if _, ok := r.placed[b.off]; ok {
					placed++
				}
			}
		}
		if placed >= 4 && 2*n >= len(v.wrong) && n > bestN {
			best, bestN = r, n
		}
	}
	v.stride = best
}

// isBackground reports whether a wrong byte still holds the background.
func (v *classifier) isBackground(b wrongByte) bool {
	return v.sc.Region.Background(v.sc.Seed, b.off, 1)[0] == b.got
}
