package layout

import (
	"encoding/binary"
	"math"
)

// Encode returns the reference bytes a kernel following the layout's
// recipes writes for one input row (RowElems bf16 or fp16 bit patterns:
// each tensor's heads × head dim, one tensor after another): one record
// per piece (per plane, for a layout of planes), in piece order. Static
// scales take 1 (see [Layout.EncodeWith]). Pad bytes are zero, whatever
// the layout's pad policy; see [Layout.DontCare] for the bytes a kernel
// may leave as it likes. A short row is taken as zero-extended.
func (l *Layout) Encode(row []uint16) [][]byte { return l.EncodeWith(row, Inputs{}) }

// EncodeWith is Encode with the kernel's inputs: the static scales the
// row's codes are divided by.
func (l *Layout) EncodeWith(row []uint16, in Inputs) [][]byte {
	row = l.fullRow(row)
	img := make([]byte, l.tokBytes)
	for _, f := range l.order {
		l.encodeField(f, row, in, img[f.img:f.img+f.size])
	}
	return l.cut(img)
}

// fullRow zero-extends a row shorter than the layout's input.
func (l *Layout) fullRow(row []uint16) []uint16 {
	if n := l.RowElems(); len(row) < n {
		r := make([]uint16, n)
		copy(r, row)
		return r
	}
	return row
}

// cut slices the token image into the pieces' records.
func (l *Layout) cut(img []byte) [][]byte {
	recs := make([][]byte, len(l.pieces))
	for i, p := range l.pieces {
		recs[i] = img[p.img : p.img+p.len : p.img+p.len]
	}
	return recs
}

// Image joins a slot's pieces (as Footprint spans them, Encode writes
// them) into the token image: each field's units in head-major order, at
// the field's image offset (see [Layout.FieldImage]).
func (l *Layout) Image(recs [][]byte) []byte {
	img := make([]byte, 0, l.tokBytes)
	for _, r := range recs {
		img = append(img, r...)
	}
	return img
}

// FieldImage is where a field's bytes lie in the token image: all heads,
// head-major, each head's units in order.
func (l *Layout) FieldImage(name string) (Span, bool) {
	f, ok := l.fields[name]
	if !ok {
		return Span{}, false
	}
	return Span{f.img, f.size}, true
}

// headElems is the input elements of field f's head h.
func (l *Layout) headElems(f *fieldInfo, row []uint16, h int) []uint16 {
	at := (f.tensor*l.heads+h)*l.HeadDim + f.From
	return row[at : at+f.To-f.From]
}

func (l *Layout) encodeField(f *fieldInfo, row []uint16, in Inputs, dst []byte) {
	per := f.units * f.ub
	for h := range l.heads {
		d := dst[h*per : (h+1)*per]
		switch f.Kind {
		case KindBF16, KindFP16:
			for i, e := range l.headElems(f, row, h) {
				binary.LittleEndian.PutUint16(d[2*i:], e)
			}
		case KindE4M3, KindE5M2:
			x := l.headElems(f, row, h)
			if f.Static != "" {
				f.quant.encodeCodes(x, in.scale(l, f, h), d)
				continue
			}
			for g := 0; g < len(x)/f.Group; g++ {
				grp := x[g*f.Group : (g+1)*f.Group]
				f.quant.encodeCodes(grp, f.quant.Scale(grp), d[g*f.Group:])
			}
		case KindE2M1:
			x, gs := l.headElems(f, row, h), nvfp4Global(in.scale(l, f, h))
			for g := 0; g < len(x)/f.Group; g++ {
				grp := x[g*f.Group : (g+1)*f.Group]
				_, sd := nvfp4BlockScale(Amax(grp), gs)
				nvfp4Codes(grp, gs, sd, d[g*f.Group/2:])
			}
		case KindScaleF32, KindScaleUE8M0:
			q := f.of
			x := l.headElems(q, row, h)
			for g := 0; g < len(x)/q.Group; g++ {
				putScale(d, g, f.Kind, q.quant.Scale(x[g*q.Group:(g+1)*q.Group]))
			}
		case KindScaleE4M3:
			q := f.of
			x, gs := l.headElems(q, row, h), nvfp4Global(in.scale(l, q, h))
			for g := 0; g < len(x)/q.Group; g++ {
				d[g], _ = nvfp4BlockScale(Amax(x[g*q.Group:(g+1)*q.Group]), gs)
			}
		case KindPad:
			clear(d)
		}
	}
}

// encodeCodes writes the codes of group under scale s to dst: Code for
// each element, with the recipe's choices hoisted out of the loop (every
// case's rows are encoded, so this is the oracle's busiest loop).
func (q Quant) encodeCodes(group []uint16, s float32, dst []byte) {
	dst = dst[:len(group)]
	switch {
	case q.Format != E4M3:
		for i, e := range group {
			dst[i] = q.Code(BF16ToFloat32(e), s)
		}
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
