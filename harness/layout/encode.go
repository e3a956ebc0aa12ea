package layout

import (
	"encoding/binary"
	"math"
)

// ScaleFloor keeps a row of zeros from dividing by zero: the fp8 scale is
// max(ScaleFloor, max|x|) / 448.
const ScaleFloor = float32(1e-4)

// Encode returns the reference bytes a correct kernel writes for one input
// row (HeadDim bf16 bit patterns): one record per plane, in plane order.
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
			s := groupScale(row[lo:lo+f.Group], f.scale.Kind)
			for i, e := range row[lo : lo+f.Group] {
				dst[g*f.Group+i] = EncodeE4M3(BF16ToFloat32(e) / s)
			}
		}
	case KindScaleF32, KindScaleUE8M0:
		q := l.fields[f.Of]
		for g := 0; g < (q.To-q.From)/q.Group; g++ {
			lo := q.From + g*q.Group
			s := groupScale(row[lo:lo+q.Group], f.Kind)
			if f.Kind == KindScaleF32 {
				binary.LittleEndian.PutUint32(dst[4*g:], math.Float32bits(s))
			} else {
				dst[g] = byte(ue8m0Exponent(s) + 127)
			}
		}
	case KindPad:
		clear(dst)
	}
}

// Scale returns the float32 scale of a group of bf16 elements:
// max(1e-4, max|x|) / 448, NaN elements ignored.
func Scale(group []uint16) float32 {
	var amax float32
	for _, e := range group {
		if a := float32(math.Abs(float64(BF16ToFloat32(e)))); a > amax {
			amax = a
		}
	}
	return max(ScaleFloor, amax) / E4M3Max
}

func groupScale(group []uint16, kind FieldKind) float32 {
	s := Scale(group)
	if kind == KindScaleUE8M0 {
		return float32(math.Ldexp(1, ue8m0Exponent(s)))
	}
	return s
}

// ue8m0Exponent rounds a scale up to a power of two and returns its
// exponent, clamped to what an unsigned 8-bit exponent can hold.
func ue8m0Exponent(s float32) int {
	frac, exp := math.Frexp(float64(s)) // s = frac · 2^exp, frac in [0.5, 1)
	if frac == 0.5 {
		exp--
	}
	return min(max(exp, -127), 127)
}
