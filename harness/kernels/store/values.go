package store

import (
	"encoding/binary"
	"fmt"
	"math"

	"github.com/kvharness/kvharness/harness/layout"
	"github.com/kvharness/kvharness/harness/oracle"
	"github.com/kvharness/kvharness/harness/pool"
)

// maxValues bounds the elements a violation decodes.
const maxValues = 8

// values decodes the first elements of a value run, want beside got, in
// its field's format: bf16 as numbers, e4m3 codes times the scale each
// side holds (the reference scale, the pool's stored one), a float32 or
// ue8m0 scale as the number it is. Nil for a field it cannot read.
func (v *classifier) values(r *oracle.Violation) *oracle.Values {
	l := v.sc.Layout
	f, ok := fieldNamed(l, r.Field)
	if !ok || r.Row == oracle.NoRow {
		return nil
	}
	plane, span, _ := l.FieldSpan(f.Name)
	at := l.Footprint(r.Slot)[plane].Off + span.Off // the field's first byte in the pool
	want := v.sc.records[r.Row][plane][span.Off:span.End()]
	got := v.got(pool.Window{Off: at, Len: span.Len})
	from := r.Off - at
	out := &oracle.Values{Field: f.Name, Format: string(f.Kind)}
	switch f.Kind {
	case layout.KindBF16:
		out.Want, out.Got = each(want, got, from, 2, func(b []byte) float64 {
			return float64(layout.BF16ToFloat32(binary.LittleEndian.Uint16(b)))
		})
	case layout.KindScaleF32:
		out.Want, out.Got = each(want, got, from, 4, func(b []byte) float64 {
			return float64(math.Float32frombits(binary.LittleEndian.Uint32(b)))
		})
	case layout.KindScaleUE8M0:
		out.Want, out.Got = each(want, got, from, 1, func(b []byte) float64 { return math.Ldexp(1, int(b[0])-127) })
	case layout.KindE4M3:
		return v.e4m3Values(r, f, from, want, got)
	default:
		return nil
	}
	return out
}

// e4m3Values decodes codes of one scale group: want with the reference
// scale, got with the scale the pool holds for the group.
func (v *classifier) e4m3Values(r *oracle.Violation, f layout.Field, from int, want, got []byte) *oracle.Values {
	ws, gs, ok := v.scales(r.Slot, r.Row, f, from/max(f.Group, 1))
	if !ok {
		return nil
	}
	out := &oracle.Values{Field: f.Name, Format: string(f.Kind), Scale: []string{num(ws), num(gs)}}
	end := min(len(want), (from/max(f.Group, 1)+1)*max(f.Group, 1)) // stay inside the group
	code := func(b []byte) float64 { return float64(layout.DecodeE4M3(b[0])) }
	out.Want, _ = each(want[:end], got[:end], from, 1, func(b []byte) float64 { return code(b) * ws })
	_, out.Got = each(want[:end], got[:end], from, 1, func(b []byte) float64 { return code(b) * gs })
	return out
}

// scales are group g's scale of e4m3 field f for a valid row in slot:
// the reference one and the one the pool holds.
func (v *classifier) scales(slot int64, row int, f layout.Field, g int) (want, got float64, ok bool) {
	l := v.sc.Layout
	for _, s := range l.Fields {
		if s.Of != f.Name {
			continue
		}
		size := 4
		if s.Kind == layout.KindScaleUE8M0 {
			size = 1
		}
		plane, span, ok := l.FieldSpan(s.Name)
		rec := v.sc.records[row]
		if !ok || len(l.Planes) == 0 || plane >= len(rec) || span.Off+(g+1)*size > len(rec[plane]) {
			// A placed layout's scale (MXFP8's, NVFP4's) is not a span of
			// one record: the violation goes without decoded values.
			return 0, 0, false
		}
		at := l.Footprint(slot)[plane].Off + span.Off + g*size
		w := rec[plane][span.Off+g*size : span.Off+(g+1)*size]
		gb := v.got(pool.Window{Off: at, Len: size})
		if size == 1 {
			return math.Ldexp(1, int(w[0])-127), math.Ldexp(1, int(gb[0])-127), true
		}
		return float64(math.Float32frombits(binary.LittleEndian.Uint32(w))),
			float64(math.Float32frombits(binary.LittleEndian.Uint32(gb))), true
	}
	return 0, 0, false
}

// each decodes up to maxValues elements of size bytes from the element
// holding byte from, in want and in got.
func each(want, got []byte, from, size int, dec func([]byte) float64) (w, g []string) {
	for at := from / size * size; at+size <= len(want) && len(w) < maxValues; at += size {
		w = append(w, num(dec(want[at:at+size])))
		g = append(g, num(dec(got[at:at+size])))
	}
	return w, g
}

func num(x float64) string { return fmt.Sprintf("%.4g", x) }

func fieldNamed(l *layout.Layout, name string) (layout.Field, bool) {
	for _, f := range l.Fields {
		if f.Name == name {
			return f, true
		}
	}
	return layout.Field{}, false
}
