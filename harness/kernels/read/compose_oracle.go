package read

import (
	"encoding/binary"
	"fmt"
	"math"

	"github.com/kvharness/kvharness/harness/layout"
)

// The findings of a composed case:
//
//	written  the writer's bytes for a key are not its layout's encoding of
//	         the row it was given (by its recipe, or bit for bit under
//	         --value exact): the writer is wrong alone
//	seen     the reader sees an element other than what the writer's bytes
//	         mean: the pair disagrees on where a field lives or what a
//	         scale means
//	missing  a probe's answer lacks a key's slot, or names another
const (
	FindWritten = "written"
	FindSeen    = "seen"
	FindMissing = "missing"
)

// ComposeFinding is one thing a composed case found wrong, about one key
// (slot) and one field of the writer's layout.
type ComposeFinding struct {
	Kind   string `json:"kind"`
	Slot   int64  `json:"slot"`
	Field  string `json:"field"`
	Group  int    `json:"group"`  // the group of a quantized field or its scale; -1 otherwise
	Off    int    `json:"offset"` // pool offset of the first byte concerned (the scale's, or the first wrong element's)
	Detail string `json:"detail"`
	// Elements are the wrong elements, at most maxShownElems: what the
	// writer was given, what its bytes hold, what the reader saw.
	Elements []ElementView `json:"elements,omitempty"`
	Wrong    int           `json:"wrong"` // elements of this slot and field the reader saw wrong
}

// ElementView is one element as each side has it.
type ElementView struct {
	Index  int     `json:"index"`
	Given  float64 `json:"given"`  // the bf16 input
	Bits   uint16  `json:"bits"`   // its bf16 bits
	Stored float64 `json:"stored"` // what the writer's bytes mean, by the writer's layout
	Code   string  `json:"code"`   // the stored code or bf16 bytes, in hex
	Seen   float64 `json:"seen"`   // the reader's score for the one-hot probe
}

const maxShownElems = 4

// judgeWritten judges a key's bytes by the writer's layout and recipe.
func judgeWritten(l *layout.Layout, k Key, recs [][]byte, m layout.Mode) []ComposeFinding {
	fs := l.Judge(k.Data(l.HeadDim), recs, m)
	out := make([]ComposeFinding, 0, len(fs))
	for _, f := range fs {
		off := -1
		if len(f.Bytes) > 0 {
			off = l.Footprint(k.Slot)[f.PieceOf(0)].Off + f.Bytes[0]
		}
		out = append(out, ComposeFinding{Kind: FindWritten, Slot: k.Slot, Field: f.Field, Group: f.Group, Off: off, Detail: f.String()})
	}
	return out
}

// judgeSeen compares what the reader saw of a key, element by element
// (seen[e] is probe e's answer), with what the writer's bytes mean.
func judgeSeen(l *layout.Layout, k Key, recs [][]byte, seen []map[int64]float32) []ComposeFinding {
	stored := DecodeKey(l, recs)
	given := k.Data(l.HeadDim)
	var out []ComposeFinding
	for e := range seen {
		if _, ok := seen[e][k.Slot]; !ok {
			return []ComposeFinding{{Kind: FindMissing, Slot: k.Slot, Group: -1, Off: -1,
				Detail: fmt.Sprintf("probe %d (a one-hot query on element %d, every key's slot, k = every key) returned no score for slot %d", e, e, k.Slot)}}
		}
	}
	tol := DefaultScoreTol(l.HeadDim)
	for _, f := range l.Fields {
		if f.Kind != layout.KindBF16 && f.Kind != layout.KindE4M3 {
			continue
		}
		group := f.To - f.From
		if f.Kind == layout.KindE4M3 {
			group = f.Group
		}
		for g0 := f.From; g0 < f.To; g0 += group {
			var wrong []int
			for e := g0; e < g0+group; e++ {
				s := float64(seen[e][k.Slot])
				if !(math.Abs(s-stored[e]) <= tol*math.Abs(stored[e])+DefaultScoreAbsTol) {
					wrong = append(wrong, e)
				}
			}
			if len(wrong) == 0 {
				continue
			}
			out = append(out, seenFinding(l, f, (g0-f.From)/group, k, recs, stored, given, seen, wrong))
		}
	}
	return out
}

// seenFinding names what the reader misread in one group of a field: its
// scale, when every nonzero element is off by one factor, else its codes
// (or bf16 elements).
func seenFinding(l *layout.Layout, f layout.Field, g int, k Key, recs [][]byte, stored []float64, given []uint16,
	seen []map[int64]float32, wrong []int) ComposeFinding {
	cf := ComposeFinding{Kind: FindSeen, Slot: k.Slot, Field: f.Name, Group: -1, Wrong: len(wrong)}
	for _, e := range wrong[:min(len(wrong), maxShownElems)] {
		cf.Elements = append(cf.Elements, ElementView{Index: e, Given: float64(layout.BF16ToFloat32(given[e])), Bits: given[e],
			Stored: stored[e], Code: storedHex(l, f, recs, e), Seen: float64(seen[e][k.Slot])})
	}
	unit := wrong[0] - f.From
	if f.Kind == layout.KindE4M3 {
		cf.Group = g
		if sf, ratio, ok := oneFactor(l, f, g, k.Slot, stored, seen); ok {
			scale := groupScales(l, f, recs)[g]
			cf.Field = sf
			cf.Off, _ = l.UnitOffset(sf, k.Slot, 0, g)
			cf.Detail = fmt.Sprintf("the reader sees group %d of %s (elements %d..%d) scaled by %.6g: it reads the group's scale as %.6g where the writer stored %.6g (%s)",
				g, f.Name, f.From+g*f.Group, f.From+(g+1)*f.Group-1, ratio, scale*ratio, scale, scaleHex(l, sf, recs, g))
			return cf
		}
	}
	cf.Off, _ = l.UnitOffset(f.Name, k.Slot, 0, unit)
	what := "element"
	if f.Kind == layout.KindE4M3 {
		what = "code"
	}
	cf.Detail = fmt.Sprintf("the reader sees %d of %d elements of %s%s other than the writer's bytes mean: it reads another %s than the writer wrote (the first at element %d)",
		len(wrong), groupLen(f), f.Name, groupName(f, g), what, wrong[0])
	return cf
}

// oneFactor reports whether the reader's view of group g is the stored
// group times one factor (other than 1): a misread scale. It needs two
// nonzero elements to tell a factor from a misread code.
func oneFactor(l *layout.Layout, f layout.Field, g int, slot int64, stored []float64, seen []map[int64]float32) (string, float64, bool) {
	ratio, n := 0.0, 0
	for e := f.From + g*f.Group; e < f.From+(g+1)*f.Group; e++ {
		s := float64(seen[e][slot])
		if stored[e] == 0 {
			if s != 0 {
				return "", 0, false
			}
			continue
		}
		r := s / stored[e]
		if n > 0 && !(math.Abs(r-ratio) <= 1e-6*math.Abs(ratio)) {
			return "", 0, false
		}
		ratio, n = r, n+1
	}
	if n < 2 || ratio == 0 || math.IsNaN(ratio) || math.IsInf(ratio, 0) {
		return "", 0, false
	}
	for _, sf := range l.Fields {
		if sf.Of == f.Name {
			return sf.Name, ratio, true
		}
	}
	return "", 0, false // a static scale: not stored, not misread
}

func groupLen(f layout.Field) int {
	if f.Kind == layout.KindE4M3 {
		return f.Group
	}
	return f.To - f.From
}

func groupName(f layout.Field, g int) string {
	if f.Kind == layout.KindE4M3 && f.Group < f.To-f.From {
		return fmt.Sprintf(" (group %d)", g)
	}
	return ""
}

// storedHex is element e's stored bytes, in hex: its code, or its bf16
// bytes.
func storedHex(l *layout.Layout, f layout.Field, recs [][]byte, e int) string {
	plane, span, _ := l.FieldSpan(f.Name)
	b := recs[plane][span.Off:span.End()]
	i := e - f.From
	if f.Kind == layout.KindE4M3 {
		return fmt.Sprintf("0x%02x", b[i])
	}
	return fmt.Sprintf("0x%04x", binary.LittleEndian.Uint16(b[2*i:]))
}

// scaleHex is group g's stored scale bytes, in hex.
func scaleHex(l *layout.Layout, field string, recs [][]byte, g int) string {
	plane, span, ok := l.FieldSpan(field)
	if !ok {
		return "?"
	}
	b := recs[plane][span.Off:span.End()]
	for _, f := range l.Fields {
		if f.Name == field && f.Kind == layout.KindScaleUE8M0 {
			return fmt.Sprintf("ue8m0 0x%02x", b[g])
		}
	}
	return fmt.Sprintf("float32 0x%08x", binary.LittleEndian.Uint32(b[4*g:]))
}

// String is a finding's element lines, for the text report.
func (v ElementView) String() string {
	return fmt.Sprintf("element %d: given %.6g (bf16 0x%04x), stored %s = %.6g, the reader sees %.6g", v.Index, v.Given, v.Bits, v.Code,
		v.Stored, v.Seen)
}
