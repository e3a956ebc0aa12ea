package layout

import (
	"encoding/binary"
	"math"
)

// Encode returns the reference bytes a kernel following the layout's
// recipes writes for one input row (HeadDim bf16 bit patterns): one record
// per plane, in plane order. Pad bytes are zero, whatever the layout's pad
// policy; see [Layout.DontCare] for the bytes a kernel may leave as it
// likes.
func (l *Layout) Encode(row []uint16) [][]byte {
	recs := make([][]byte, len(l.planes))
	for i, p := range l.planes {
		recs[i] = make([]byte, p.stride)
		for _, f := range p.fields {
			l.encodeField(f, row, recs[i][f.offset:f.offset+f.size])
		}
	}
	return recs
}

func (l *Layout) encodeField(f *fieldInfo, row []uint16, dst []byte) {
	switch f.Kind {
	case KindBF16:
		for i, e := range row[f.From:f.To] {
			binary.LittleEndian.PutUint16(dst[2*i:], e)
		}
	case KindE4M3:
		for g := 0; g < (f.To-f.From)/f.Group; g++ {
			lo := f.From + g*f.Group
			f.quant.encodeCodes(row[lo:lo+f.Group], f.quant.Scale(row[lo:lo+f.Group]), dst[g*f.Group:])
		}
	case KindScaleF32, KindScaleUE8M0:
		q := l.fields[f.Of]
		for g := 0; g < (q.To-q.From)/q.Group; g++ {
			lo := q.From + g*q.Group
			putScale(dst, g, f.Kind, q.quant.Scale(row[lo:lo+q.Group]))
		}
	case KindPad:
		clear(dst)
	}
}

// encodeCodes writes the codes of group under scale s to dst: Code for
// each element, with the recipe's choices hoisted out of the loop (every
// case's rows are encoded, so this is the oracle's busiest loop).
func (q Quant) encodeCodes(group []uint16, s float32, dst []byte) {
	dst = dst[:len(group)]
	switch {
	case q.Saturate && q.Reciprocal:
		r := 1 / s
		for i, e := range group {
			dst[i] = EncodeE4M3(BF16ToFloat32(e) * r)
		}
	case q.Saturate:
		for i, e := range group {
			dst[i] = EncodeE4M3(BF16ToFloat32(e) / s)
		}
	default:
		for i, e := range group {
			dst[i] = q.Code(BF16ToFloat32(e), s)
		}
	}
}

// putScale stores group g's scale s in a scale field's bytes.
func putScale(dst []byte, g int, kind FieldKind, s float32) {
	if kind == KindScaleF32 {
		binary.LittleEndian.PutUint32(dst[4*g:], math.Float32bits(s))
		return
	}
	dst[g] = UE8M0Byte(s)
}

// storedScale reads group g's scale from a scale field's bytes.
func storedScale(src []byte, g int, kind FieldKind) float32 {
	if kind == KindScaleF32 {
		return math.Float32frombits(binary.LittleEndian.Uint32(src[4*g:]))
	}
	return UE8M0Scale(src[g])
}

// scaleBytes is the size of one stored scale.
func scaleBytes(kind FieldKind) int {
	if kind == KindScaleF32 {
		return 4
	}
	return 1
}

// Scale returns the default recipe's float32 scale of a group of bf16
// elements: max(1e-4, max|x|) / 448, NaN elements ignored.
func Scale(group []uint16) float32 { return DefaultQuant(KindScaleF32).Scale(group) }
