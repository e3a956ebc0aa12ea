package layout

import (
	"errors"
	"fmt"
)

// FieldKind says how a field turns a token's elements into bytes.
type FieldKind string

// The field kinds. A quantized field (e4m3) needs exactly one scale field
// (scale-f32 or scale-ue8m0) naming it in Of; the scale field's kind picks
// the scale rule.
const (
	KindBF16       FieldKind = "bf16"        // elements [From,To) as bf16, 2 B each
	KindE4M3       FieldKind = "e4m3"        // elements [From,To) as e4m3 codes, 1 B each
	KindScaleF32   FieldKind = "scale-f32"   // one float32 per group of the field Of
	KindScaleUE8M0 FieldKind = "scale-ue8m0" // one power-of-two exponent byte per group
	KindPad        FieldKind = "pad"         // Bytes bytes no element owns; see PadPolicy
)

// A Field is one named part of a token's record.
type Field struct {
	Name  string    `json:"name"`
	Kind  FieldKind `json:"kind"`
	From  int       `json:"from,omitempty"`
	To    int       `json:"to,omitempty"`
	Group int       `json:"group,omitempty"` // e4m3: elements per scale
	Of    string    `json:"of,omitempty"`    // scale fields: the e4m3 field
	Bytes int       `json:"bytes,omitempty"` // pad
	// Recipe is an e4m3 field's arithmetic; nil is the default recipe. A
	// plugin's declared recipe replaces it (see [Layout.WithRecipe]).
	Recipe *Recipe `json:"recipe,omitempty"`
	// Policy says what a pad field must hold: any byte (the default) or
	// zero.
	Policy PadPolicy `json:"policy,omitempty"`
}

// A Layout is a cache layout for one head dimension and page size. Build
// one with [Builtin] or [Parse]; the zero value is not usable.
type Layout struct {
	Name      string     `json:"name"`
	Doc       string     `json:"doc,omitempty"`
	HeadDim   int        `json:"head_dim"`
	PageSize  int        `json:"page_size"`
	Fields    []Field    `json:"fields"`
	Planes    [][]string `json:"planes"`
	PageAlign int        `json:"page_align,omitempty"`

	fields    map[string]*fieldInfo
	planes    []planeInfo
	pageBytes int
	tokBytes  int
	builtin   bool // made by Builtin: Reshaped can take it to another head dim
}

type fieldInfo struct {
	Field
	size   int
	plane  int
	offset int    // within the plane record
	scale  *Field // e4m3: its scale field
	quant  Quant  // e4m3: its recipe, resolved
}

type planeInfo struct {
	fields []*fieldInfo
	stride int // bytes per token in this plane
	offset int // within the page
}

// ErrInvalid is wrapped by every validation error.
var ErrInvalid = errors.New("invalid layout")

func invalid(l *Layout, format string, args ...any) error {
	return fmt.Errorf("%w %q: %s", ErrInvalid, l.Name, fmt.Sprintf(format, args...))
}

// BytesPerToken is the number of bytes one token occupies, all planes.
func (l *Layout) BytesPerToken() int { return l.tokBytes }

// PageBytes is the size of one page, including alignment padding.
func (l *Layout) PageBytes() int { return l.pageBytes }

// PoolBytes is the size of a pool of the given slot count: whole pages.
func (l *Layout) PoolBytes(slots int) int { return l.Pages(slots) * l.pageBytes }

// Pages is the number of pages needed for slots tokens.
func (l *Layout) Pages(slots int) int { return (slots + l.PageSize - 1) / l.PageSize }

// RowBytes is the size of one input row: HeadDim bf16 elements.
func (l *Layout) RowBytes() int { return 2 * l.HeadDim }

// Span is a half-open byte range [Off, Off+Len) relative to the pool base.
type Span struct{ Off, Len int }

// End is the first byte after the span.
func (s Span) End() int { return s.Off + s.Len }

// Footprint returns the spans slot owns, one per plane, relative to the
// pool base. Slots may be negative or past the end: the spans then fall
// outside the pool, which is where a kernel writing that slot would land.
func (l *Layout) Footprint(slot int64) []Span {
	spans := make([]Span, len(l.planes))
	page, off := FloorDiv(slot, int64(l.PageSize))
	for i, p := range l.planes {
		spans[i] = Span{int(page)*l.pageBytes + p.offset + int(off)*p.stride, p.stride}
	}
	return spans
}

// FloorDiv divides rounding toward minus infinity, so that a slot or an
// offset before the pool base (a -1 slot) lands in page -1.
func FloorDiv[T ~int | ~int64](a, b T) (q, r T) {
	q, r = a/b, a%b
	if r < 0 {
		q, r = q-1, r+b
	}
	return q, r
}

// Owner is what a layout knows about one pool byte.
type Owner struct {
	Slot   int64  // token slot owning the byte
	Plane  int    // plane index
	Field  string // field name within the plane record
	Offset int    // byte offset within the plane record
}

// Locate says which slot, plane and field own pool byte off. It returns
// false for page alignment padding and for bytes past slots.
func (l *Layout) Locate(off int, slots int) (Owner, bool) {
	if off < 0 {
		return Owner{}, false
	}
	page, r := off/l.pageBytes, off%l.pageBytes
	for i, p := range l.planes {
		if r < p.offset || r >= p.offset+l.PageSize*p.stride {
			continue
		}
		tok, inRec := (r-p.offset)/p.stride, (r-p.offset)%p.stride
		slot := int64(page*l.PageSize + tok)
		if slot >= int64(slots) {
			return Owner{}, false
		}
		return Owner{Slot: slot, Plane: i, Field: p.fieldAt(inRec), Offset: inRec}, true
	}
	return Owner{}, false
}

func (p planeInfo) fieldAt(inRec int) string {
	for _, f := range p.fields {
		if inRec >= f.offset && inRec < f.offset+f.size {
			return f.Name
		}
	}
	return ""
}

// PlaneFields lists the field names of plane i in record order.
func (l *Layout) PlaneFields(i int) []string { return l.Planes[i] }

// FieldSpan returns the byte range of a field within its plane's record.
func (l *Layout) FieldSpan(name string) (plane int, s Span, ok bool) {
	f, ok := l.fields[name]
	if !ok {
		return 0, Span{}, false
	}
	return f.plane, Span{f.offset, f.size}, true
}

// FootprintPaged is Footprint with another page size in bytes: where a
// kernel that computes the page stride differently puts slot's bytes.
func (l *Layout) FootprintPaged(slot int64, pageBytes int) []Span {
	spans := make([]Span, len(l.planes))
	page, off := FloorDiv(slot, int64(l.PageSize))
	for i, p := range l.planes {
		spans[i] = Span{int(page)*pageBytes + p.offset + int(off)*p.stride, p.stride}
	}
	return spans
}

// Rearranged returns the same fields in other planes: the layout a kernel
// that confuses interleaved and packed arrangements writes.
func (l *Layout) Rearranged(planes [][]string) (*Layout, error) {
	c := &Layout{Name: l.Name, Doc: l.Doc, HeadDim: l.HeadDim, PageSize: l.PageSize,
		Fields: append([]Field(nil), l.Fields...), Planes: planes, PageAlign: l.PageAlign}
	if err := c.compile(); err != nil {
		return nil, err
	}
	return c, nil
}
