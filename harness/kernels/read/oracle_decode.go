package read

import (
	"encoding/binary"
	"math"

	"github.com/kvharness/kvharness/harness/layout"
)

// DecodeKey returns the key a layout's records (one per plane, as Encode
// makes them) hold, in float64: bf16 elements exactly, e4m3 codes as
// DecodeE4M3(code) × their group's scale, which float64 holds exactly.
// It reads any layout, planes and groups included, from its description.
func DecodeKey(l *layout.Layout, records [][]byte) []float64 {
	out := make([]float64, l.HeadDim)
	for _, f := range l.Fields {
		plane, span, _ := l.FieldSpan(f.Name)
		b := records[plane][span.Off:span.End()]
		switch f.Kind {
		case layout.KindBF16:
			for i := range f.To - f.From {
				out[f.From+i] = float64(layout.BF16ToFloat32(binary.LittleEndian.Uint16(b[2*i:])))
			}
		case layout.KindE4M3:
			scales := groupScales(l, f, records)
			for i := range f.To - f.From {
				out[f.From+i] = float64(layout.DecodeE4M3(b[i])) * scales[i/f.Group]
			}
		}
	}
	return out
}

// groupScales decodes the scales of an e4m3 field's groups.
func groupScales(l *layout.Layout, f layout.Field, records [][]byte) []float64 {
	for _, s := range l.Fields {
		if s.Of != f.Name {
			continue
		}
		plane, span, _ := l.FieldSpan(s.Name)
		b := records[plane][span.Off:span.End()]
		out := make([]float64, (f.To-f.From)/f.Group)
		for g := range out {
			if s.Kind == layout.KindScaleF32 {
				out[g] = float64(math.Float32frombits(binary.LittleEndian.Uint32(b[4*g:])))
			} else {
				out[g] = math.Ldexp(1, int(b[g])-127)
			}
		}
		return out
	}
	return nil
}

// Quantized reports whether a layout stores any field quantized, so that
// a read of it is judged by Jaccard rather than exact set equality.
func Quantized(l *layout.Layout) bool {
	for _, f := range l.Fields {
		if f.Kind == layout.KindE4M3 {
			return true
		}
	}
	return false
}
