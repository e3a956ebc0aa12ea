package layout

import (
	"encoding/binary"
	"fmt"
	"strings"
)

// A Finding is one reason a row's stored bytes are wrong: the rule it
// broke, where (field, group, and the bytes within a plane's record), and
// by how much.
type Finding struct {
	Rule  Rule
	Field string
	Group int // the group of an e4m3 or scale field; -1 for other fields
	Plane int
	// Bytes are the offsets, within plane Plane's record, of the bytes
	// that do not pass, ascending: the scale's bytes, the failing codes,
	// the differing bytes of bf16 elements, the non-zero pad bytes.
	Bytes []int
	// Want is the byte the rule wants at each of Bytes: the recipe's
	// scale (the reference's, in exact mode), the recipe's code for x
	// over the stored scale, the input's bf16 byte, zero. A scale's bytes
	// that happen to hold their wanted value are listed too: the scale is
	// judged whole.
	Want  []byte
	Scale *ScaleDiff // RuleScale
	Codes *CodeDiff  // RuleCode
	BF16  *BF16Diff  // RuleBF16
	Eps   *EpsMatch  // RuleScale: another floor explains the group
}

// BF16Diff is how a bf16 field missed the input.
type BF16Diff struct {
	Bad, Of   int    // elements that differ, of the field's
	Elem      int    // the first, as an element index of the row
	Got, Want uint16 // its stored and input bit patterns
}

func (d BF16Diff) String() string {
	return fmt.Sprintf("%d of %d bf16 elements differ from the input: element %d holds %#04x (%g), want %#04x (%g)",
		d.Bad, d.Of, d.Elem, d.Got, BF16ToFloat32(d.Got), d.Want, BF16ToFloat32(d.Want))
}

// String says which rule failed and by how much, in one line.
func (f Finding) String() string {
	where := f.Field
	if f.Group >= 0 {
		where = fmt.Sprintf("%s group %d", f.Field, f.Group)
	}
	var what string
	switch {
	case f.Scale != nil:
		what = f.Scale.String()
	case f.Codes != nil:
		what = f.Codes.String()
	case f.BF16 != nil:
		what = f.BF16.String()
	case f.Rule == RulePad:
		what = fmt.Sprintf("%d pad bytes are not zero (the layout's pad policy is zero)", len(f.Bytes))
	}
	s := fmt.Sprintf("%s rule, %s: %s", f.Rule, where, what)
	if f.Eps != nil {
		s += "; " + f.Eps.String()
	}
	return s
}

// Judge compares the bytes a kernel stored for one row (got: one record
// per plane, as Encode returns them) with the row under the layout's
// recipes and pad policies, and returns what is wrong, field by field in
// layout order. An empty result means the row passes.
func (l *Layout) Judge(row []uint16, got [][]byte, m Mode) []Finding {
	var out []Finding
	for i := range l.Fields {
		f := l.fields[l.Fields[i].Name]
		switch f.Kind {
		case KindBF16:
			out = appendFinding(out, l.judgeBF16(f, row, got[f.plane]))
		case KindE4M3:
			out = append(out, l.judgeE4M3(f, row, got, m)...)
		case KindPad:
			out = appendFinding(out, l.judgePad(f, got[f.plane]))
		}
	}
	return out
}

func appendFinding(out []Finding, f *Finding) []Finding {
	if f == nil {
		return out
	}
	return append(out, *f)
}

func (l *Layout) judgeBF16(f *fieldInfo, row []uint16, rec []byte) *Finding {
	var d *BF16Diff
	var bytes []int
	var wants []byte
	for i, want := range row[f.From:f.To] {
		at := f.offset + 2*i
		got := binary.LittleEndian.Uint16(rec[at:])
		if got == want {
			continue
		}
		if d == nil {
			d = &BF16Diff{Of: f.To - f.From, Elem: f.From + i, Got: got, Want: want}
		}
		d.Bad++
		for k := range 2 {
			if w := byte(want >> (8 * k)); rec[at+k] != w {
				bytes, wants = append(bytes, at+k), append(wants, w)
			}
		}
	}
	if d == nil {
		return nil
	}
	return &Finding{Rule: RuleBF16, Field: f.Name, Group: -1, Plane: f.plane, Bytes: bytes, Want: wants, BF16: d}
}

func (l *Layout) judgePad(f *fieldInfo, rec []byte) *Finding {
	if !f.Policy.Zeroed() {
		return nil
	}
	var bytes []int
	for k := range f.size {
		if rec[f.offset+k] != 0 {
			bytes = append(bytes, f.offset+k)
		}
	}
	if bytes == nil {
		return nil
	}
	return &Finding{Rule: RulePad, Field: f.Name, Group: -1, Plane: f.plane, Bytes: bytes, Want: make([]byte, len(bytes))}
}

// judgeE4M3 judges every group of an e4m3 field with its scale.
func (l *Layout) judgeE4M3(f *fieldInfo, row []uint16, got [][]byte, m Mode) []Finding {
	sf := l.fields[f.scale.Name]
	codes, scales := got[f.plane][f.offset:f.offset+f.size], got[sf.plane][sf.offset:sf.offset+sf.size]
	width := scaleBytes(sf.Kind)
	var out []Finding
	for g := 0; g < (f.To-f.From)/f.Group; g++ {
		lo := f.From + g*f.Group
		v := f.quant.JudgeGroup(row[lo:lo+f.Group], storedScale(scales, g, sf.Kind), codes[g*f.Group:(g+1)*f.Group], m)
		if v.Scale != nil {
			want := make([]byte, width)
			putScale(want, 0, sf.Kind, v.Scale.Want)
			out = append(out, Finding{Rule: RuleScale, Field: sf.Name, Group: g, Plane: sf.plane,
				Bytes: span(sf.offset+g*width, width), Want: want, Scale: v.Scale, Eps: v.Eps})
		}
		if v.Codes != nil {
			bytes := make([]int, len(v.Bad))
			for i, b := range v.Bad {
				bytes[i] = f.offset + g*f.Group + b
			}
			c := *v.Codes
			c.Elem += lo
			out = append(out, Finding{Rule: RuleCode, Field: f.Name, Group: g, Plane: f.plane, Bytes: bytes, Want: v.Want, Codes: &c})
		}
	}
	return out
}

func span(off, n int) []int {
	out := make([]int, n)
	for i := range out {
		out[i] = off + i
	}
	return out
}

// Summary joins findings' one-line descriptions with "; ".
func Summary(fs []Finding) string {
	parts := make([]string, len(fs))
	for i, f := range fs {
		parts[i] = f.String()
	}
	return strings.Join(parts, "; ")
}
