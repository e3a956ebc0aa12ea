package oracle

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
func (sc *StoreCheck) misreadings() []misreading {
	l := sc.Layout
	var ms []misreading
	for _, b := range distinct(l.HeadDim, 2*l.HeadDim, sc.Declared.BytesPerToken, l.BytesPerToken()) {
		ms = append(ms, sc.rowsOf(b))
	}
	for _, pb := range distinct(l.HeadDim*l.PageSize, 2*l.HeadDim*l.PageSize, sc.Declared.PageBytes) {
		if pb != l.PageBytes() {
			ms = append(ms, sc.pagedAs(pb))
		}
	}
	for _, planes := range [][][]string{oneRecord(l), onePlaneEach(l)} {
		if alt, err := l.Rearranged(planes); err == nil {
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

func (sc *StoreCheck) rowsOf(stride int) misreading {
	return func(slot int64, row int) ([]layout.Span, [][]byte) {
		rec := bytes.Join(sc.records[row], nil)
		return []layout.Span{{Off: int(slot) * stride, Len: len(rec)}}, [][]byte{rec}
	}
}

func (sc *StoreCheck) pagedAs(pageBytes int) misreading {
	return func(slot int64, row int) ([]layout.Span, [][]byte) {
		return sc.Layout.FootprintPaged(slot, pageBytes), sc.records[row]
	}
}

func (sc *StoreCheck) arranged(alt *layout.Layout) misreading {
	return func(slot int64, row int) ([]layout.Span, [][]byte) {
		return alt.Footprint(slot), alt.Encode(sc.rows[row])
	}
}

func oneRecord(l *layout.Layout) [][]string {
	var all []string
	for i := range l.Planes {
		all = append(all, l.PlaneFields(i)...)
	}
	return [][]string{all}
}

func onePlaneEach(l *layout.Layout) [][]string {
	var out [][]string
	for _, names := range oneRecord(l)[0:1] {
		for _, n := range names {
			out = append(out, []string{n})
		}
	}
	return out
}

// strided reports whether got at pool offset off is what a valid row
// would have put there under one of the misreadings.
func (v *classifier) strided(off int, got byte) bool {
	for _, b := range v.sc.strideMap()[off] {
		if b == got {
			return true
		}
	}
	return false
}

// strideMap is built on the first unexplained byte only: passing cases
// never pay for it.
func (sc *StoreCheck) strideMap() map[int][]byte {
	if sc.stride != nil {
		return sc.stride
	}
	sc.stride = map[int][]byte{}
	for _, m := range sc.misreadings() {
		for i := range sc.Case.Valid {
			spans, recs := m(sc.Case.Loc[i], i)
			for k, sp := range spans {
				for j := range sp.Len {
					sc.stride[sp.Off+j] = append(sc.stride[sp.Off+j], recs[k][j])
				}
			}
		}
	}
	return sc.stride
}
