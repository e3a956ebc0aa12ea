package layout

import (
	"encoding/binary"
	"fmt"
	"strings"
)

// A Finding is one reason a row's stored bytes are wrong: the rule it
// broke, where (field, head, group, and the bytes within a piece's
// record), and by how much.
type Finding struct {
	Rule  Rule
	Field string
	Group int // the group of a quantized or scale field; -1 for other fields
	// Head is the KV head of a layout of several heads; -1 where the
	// layout has one.
	Head  int
	Plane int
	// Bytes are the offsets, within piece Plane's record (plane Plane's,
	// for a layout of planes), of the bytes that do not pass, ascending:
	// the scale's bytes, the failing codes, the differing bytes of bf16
	// elements, the non-zero pad bytes. Where a finding's bytes lie in
	// several pieces, Pieces holds each byte's piece (see PieceOf).
	Bytes  []int
	Pieces []int
	// Want is the byte the rule wants at each of Bytes: the recipe's
	// scale (the reference's, in exact mode), the recipe's code for x
	// over the stored scale, the input's bf16 byte, zero. A scale's bytes
	// that happen to hold their wanted value are listed too: the scale is
	// judged whole.
	Want  []byte
	Scale *ScaleDiff // RuleScale, a stored float32 or ue8m0 scale
	Block *BlockDiff // RuleScale, an NVFP4 block scale
	Codes *CodeDiff  // RuleCode
	BF16  *BF16Diff  // RuleBF16, RuleFP16
	Eps   *EpsMatch  // RuleScale: another floor explains the group
	// Kept says a pad finding is of bytes the policy keeps: they changed.
	Kept bool
}

// PieceOf is the piece holding Bytes[j].
func (f Finding) PieceOf(j int) int {
	if f.Pieces != nil {
		return f.Pieces[j]
	}
	return f.Plane
}

func (f *Finding) addByte(p, at int, want byte) {
	if p != f.Plane && f.Pieces == nil {
		f.Pieces = make([]int, len(f.Bytes))
		for i := range f.Pieces {
			f.Pieces[i] = f.Plane
		}
	}
	f.Bytes, f.Want = append(f.Bytes, at), append(f.Want, want)
	if f.Pieces != nil {
		f.Pieces = append(f.Pieces, p)
	}
}

// BF16Diff is how a bf16 (or fp16) field missed the input.
type BF16Diff struct {
	Bad, Of   int    // elements that differ, of the field's
	Elem      int    // the first, as an element index of the row
	Got, Want uint16 // its stored and input bit patterns
	FP16      bool   // the elements are IEEE half, not bf16
}

func (d BF16Diff) String() string {
	name, dec := "bf16", BF16ToFloat32
	if d.FP16 {
		name, dec = "fp16", FP16ToFloat32
	}
	return fmt.Sprintf("%d of %d %s elements differ from the input: element %d holds %#04x (%g), want %#04x (%g)",
		d.Bad, d.Of, name, d.Elem, d.Got, dec(d.Got), d.Want, dec(d.Want))
}

// String says which rule failed and by how much, in one line.
func (f Finding) String() string {
	where := f.Field
	if f.Head >= 0 {
		where = fmt.Sprintf("%s head %d", f.Field, f.Head)
	}
	if f.Group >= 0 {
		where = fmt.Sprintf("%s group %d", where, f.Group)
	}
	var what string
	switch {
	case f.Scale != nil:
		what = f.Scale.String()
	case f.Block != nil:
		what = f.Block.String()
	case f.Codes != nil:
		what = f.Codes.String()
	case f.BF16 != nil:
		what = f.BF16.String()
	case f.Rule == RulePad && f.Kept:
		what = fmt.Sprintf("%d pad bytes changed (the pad policy is keep: the kernel never writes them)", len(f.Bytes))
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
// per piece, as Encode returns them) with the row under the layout's
// recipes and pad policies, and returns what is wrong, field by field in
// layout order. An empty result means the row passes. Static scales take
// 1 (see [Layout.JudgeWith]).
func (l *Layout) Judge(row []uint16, got [][]byte, m Mode) []Finding {
	return l.JudgeWith(row, Inputs{}, got, m)
}

// JudgeWith is Judge with the kernel's inputs: the static scales.
func (l *Layout) JudgeWith(row []uint16, in Inputs, got [][]byte, m Mode) []Finding {
	row = l.fullRow(row)
	v := view{l: l, got: got}
	if !l.oneBlock {
		v.img = l.Image(got)
	}
	var out []Finding
	for _, f := range l.order {
		switch f.Kind {
		case KindBF16, KindFP16:
			out = appendFinding(out, l.judgeCopy(f, row, v))
		case KindE4M3, KindE5M2:
			out = append(out, l.judgeQuant(f, row, in, v, m)...)
		case KindE2M1:
			out = append(out, l.judgeNVFP4(f, row, in, v, m)...)
		case KindPad:
			out = appendFinding(out, l.judgePad(f, v))
		}
	}
	if v.img != nil {
		for i := range out {
			l.toPieces(&out[i])
		}
	}
	return out
}

// view is a row's stored bytes as the judgement reads them: the pieces
// themselves where every field lies in one, else the joined image.
type view struct {
	l   *Layout
	got [][]byte
	img []byte
}

// field is field f's bytes: the record holding them, their offset in it,
// and its piece (-1 for the image).
func (v view) field(f *fieldInfo) (rec []byte, off, plane int) {
	if v.img == nil {
		return v.got[f.piece], f.pieceOff, f.piece
	}
	return v.img, f.img, -1
}

// toPieces turns a finding's image offsets into piece offsets.
func (l *Layout) toPieces(f *Finding) {
	if f.Plane >= 0 {
		return
	}
	bytes, want := f.Bytes, f.Want
	f.Bytes, f.Want, f.Pieces = nil, nil, nil
	for j, b := range bytes {
		p := l.pieceAt(b)
		if j == 0 {
			f.Plane = p
		}
		f.addByte(p, b-l.pieces[p].img, want[j])
	}
}

func appendFinding(out []Finding, f *Finding) []Finding {
	if f == nil {
		return out
	}
	return append(out, *f)
}

// head is the finding's head: -1 for a layout of one head.
func (l *Layout) head(h int) int {
	if l.heads == 1 {
		return -1
	}
	return h
}

func (l *Layout) judgeCopy(f *fieldInfo, row []uint16, v view) *Finding {
	rec, base, plane := v.field(f)
	var d *BF16Diff
	var bytes []int
	var wants []byte
	head := -1
	for h := range l.heads {
		for i, want := range l.headElems(f, row, h) {
			at := base + (h*f.units+i)*2
			got := binary.LittleEndian.Uint16(rec[at:])
			if got == want {
				continue
			}
			if d == nil {
				d = &BF16Diff{Of: l.heads * f.units, Elem: (f.tensor*l.heads+h)*l.HeadDim + f.From + i, Got: got, Want: want, FP16: f.Kind == KindFP16}
				head = l.head(h)
			}
			d.Bad++
			for k := range 2 {
				if w := byte(want >> (8 * k)); rec[at+k] != w {
					bytes, wants = append(bytes, at+k), append(wants, w)
				}
			}
		}
	}
	if d == nil {
		return nil
	}
	rule := RuleBF16
	if d.FP16 {
		rule = RuleFP16
	}
	return &Finding{Rule: rule, Field: f.Name, Group: -1, Head: head, Plane: plane, Bytes: bytes, Want: wants, BF16: d}
}

func (l *Layout) judgePad(f *fieldInfo, v view) *Finding {
	if !f.Policy.Zeroed() {
		return nil
	}
	rec, base, plane := v.field(f)
	var bytes []int
	for k := range f.size {
		if rec[base+k] != 0 {
			bytes = append(bytes, base+k)
		}
	}
	if bytes == nil {
		return nil
	}
	return &Finding{Rule: RulePad, Field: f.Name, Group: -1, Head: -1, Plane: plane, Bytes: bytes, Want: make([]byte, len(bytes))}
}

// judgeQuant judges every group of an e4m3 or e5m2 field: with its
// stored scale, or each head's codes against the kernel's static scale.
func (l *Layout) judgeQuant(f *fieldInfo, row []uint16, in Inputs, v view, m Mode) []Finding {
	codes, cbase, cplane := v.field(f)
	var out []Finding
	if f.Static != "" {
		for h := range l.heads {
			x, at := l.headElems(f, row, h), cbase+h*f.units
			d, bad, want := f.quant.judgeCodes(x, in.scale(l, f, h), codes[at:at+f.units], m)
			if d == nil {
				continue
			}
			bytes := make([]int, len(bad))
			for i, b := range bad {
				bytes[i] = at + b
			}
			c := *d
			c.Elem += (f.tensor*l.heads+h)*l.HeadDim + f.From
			out = append(out, Finding{Rule: RuleCode, Field: f.Name, Group: -1, Head: l.head(h), Plane: cplane, Bytes: bytes, Want: want, Codes: &c})
		}
		return out
	}
	sf := f.scale
	scales, sbase, splane := v.field(sf)
	width := scaleBytes(sf.Kind)
	groups := f.units / f.Group
	for h := range l.heads {
		x := l.headElems(f, row, h)
		for g := range groups {
			lo := g * f.Group
			cat, sat := cbase+h*f.units+lo, sbase+(h*groups+g)*width
			gv := f.quant.JudgeGroup(x[lo:lo+f.Group], storedScale(scales[sat:], 0, sf.Kind), codes[cat:cat+f.Group], m)
			if gv.Scale != nil {
				want := make([]byte, width)
				putScale(want, 0, sf.Kind, gv.Scale.Want)
				out = append(out, Finding{Rule: RuleScale, Field: sf.Name, Group: g, Head: l.head(h), Plane: splane,
					Bytes: span(sat, width), Want: want, Scale: gv.Scale, Eps: gv.Eps})
			}
			if gv.Codes != nil {
				bytes := make([]int, len(gv.Bad))
				for i, b := range gv.Bad {
					bytes[i] = cat + b
				}
				c := *gv.Codes
				c.Elem += (f.tensor*l.heads+h)*l.HeadDim + f.From + lo
				out = append(out, Finding{Rule: RuleCode, Field: f.Name, Group: g, Head: l.head(h), Plane: cplane, Bytes: bytes, Want: gv.Want, Codes: &c})
			}
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
