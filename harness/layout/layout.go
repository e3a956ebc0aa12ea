package layout

import (
	"errors"
	"fmt"
	"sort"
)

// FieldKind says how a field turns a token's elements into bytes.
type FieldKind string

// The field kinds. A quantized field (e4m3, e5m2) takes its scale from
// one scale field naming it in Of (scale-f32 or scale-ue8m0: the scale
// field's kind picks the scale rule) or, with Static set, from the
// kernel's inputs. An e2m1 field (NVFP4) needs a scale-e4m3 field for
// its block scales and Static for its global scale.
const (
	KindBF16       FieldKind = "bf16"        // elements [From,To) as bf16, 2 B each
	KindFP16       FieldKind = "fp16"        // elements [From,To) as IEEE half, 2 B each (fp16 input)
	KindE4M3       FieldKind = "e4m3"        // elements [From,To) as e4m3 codes, 1 B each
	KindE5M2       FieldKind = "e5m2"        // elements [From,To) as e5m2 codes, 1 B each
	KindE2M1       FieldKind = "e2m1"        // elements [From,To) as e2m1 codes, two per byte, the even element in the low nibble
	KindScaleF32   FieldKind = "scale-f32"   // one float32 per group of the field Of
	KindScaleUE8M0 FieldKind = "scale-ue8m0" // one power-of-two exponent byte per group
	KindScaleE4M3  FieldKind = "scale-e4m3"  // one e4m3 block scale per group of an e2m1 field (NVFP4)
	KindPad        FieldKind = "pad"         // Bytes bytes no element owns; see PadPolicy
)

// isQuant reports whether a kind holds fp8 codes a recipe governs.
func (k FieldKind) isQuant() bool { return k == KindE4M3 || k == KindE5M2 }

// isScale reports whether a kind holds stored scales.
func (k FieldKind) isScale() bool {
	return k == KindScaleF32 || k == KindScaleUE8M0 || k == KindScaleE4M3
}

// format is a code field's number format.
func (k FieldKind) format() CodeFormat {
	switch k {
	case KindE5M2:
		return E5M2
	case KindE2M1:
		return E2M1
	}
	return E4M3
}

// ScaleGrain is how many static scales a field takes from the kernel's
// inputs: one per tensor or one per head.
type ScaleGrain string

// The static scale grains.
const (
	PerTensor ScaleGrain = "tensor" // one scale for the tensor (vLLM's k_scale, v_scale)
	PerHead   ScaleGrain = "head"   // one scale per KV head
)

// A Field is one named part of a token's bytes.
type Field struct {
	Name  string    `json:"name"`
	Kind  FieldKind `json:"kind"`
	From  int       `json:"from,omitempty"`
	To    int       `json:"to,omitempty"`
	Group int       `json:"group,omitempty"` // quantized fields: elements per stored scale
	Of    string    `json:"of,omitempty"`    // scale fields: the quantized field
	Bytes int       `json:"bytes,omitempty"` // pad
	// Recipe is an e4m3 or e5m2 field's arithmetic; nil is the default
	// recipe. A plugin's declared recipe replaces it (see
	// [Layout.WithRecipe]).
	Recipe *Recipe `json:"recipe,omitempty"`
	// Policy says what a pad field must hold: any byte (the default),
	// zero, or what it held before the store.
	Policy PadPolicy `json:"policy,omitempty"`
	// Tensor names the input tensor the field's elements come from (one
	// of the layout's Tensors; empty: the first).
	Tensor string `json:"tensor,omitempty"`
	// Static says the field's scale is a kernel input, not stored: one
	// per tensor or per head (see [Inputs]). On an e2m1 field it is the
	// NVFP4 global scale's inverse, vLLM's k_scale.
	Static ScaleGrain `json:"static,omitempty"`
	// Place puts the field's units in a region's pages; a field without
	// one is in a plane (see Layout.Planes).
	Place *Place `json:"place,omitempty"`
}

// A Region is a part of the pool holding pages of its own: the pool is
// its regions one after another, each as many pages long as the pool has
// pages. Two regions of K and V pages make vLLM's K-before-V cache; one
// region with both in a page makes FlashInfer's.
type Region struct {
	Name string `json:"name"`
	// PageBytes is the page stride; zero: the bytes its fields reach,
	// rounded up to Align (or to the largest unit alignment).
	PageBytes int `json:"page_bytes,omitempty"`
	Align     int `json:"align,omitempty"`
}

// A Layout is a cache layout for one head dimension, head count and page
// size. Build one with [Builtin], [BuiltinDims] or [Parse]; the zero
// value is not usable.
type Layout struct {
	Name      string     `json:"name"`
	Doc       string     `json:"doc,omitempty"`
	HeadDim   int        `json:"head_dim"`
	PageSize  int        `json:"page_size"`
	Fields    []Field    `json:"fields"`
	Planes    [][]string `json:"planes,omitempty"`
	PageAlign int        `json:"page_align,omitempty"`
	// Heads is the KV heads per token of each tensor (0 means 1).
	Heads int `json:"heads,omitempty"`
	// Tensors names the inputs a token has, each Heads × HeadDim
	// elements (none: one unnamed tensor). An input row is the tensors'
	// elements one after another, each head-major.
	Tensors []string `json:"tensors,omitempty"`
	// Input is the input elements' format: bf16 (the default) or fp16.
	Input string `json:"input,omitempty"`
	// Regions lists the pool's regions for placed fields, in pool order.
	Regions []Region `json:"regions,omitempty"`
	// ReservedSlots is how many slots at the pool's start the engine
	// keeps as a sink for padded tokens (SGLang's slot 0).
	ReservedSlots int `json:"reserved_slots,omitempty"`

	fields    map[string]*fieldInfo
	order     []*fieldInfo // fields in layout order
	planes    []planeInfo
	regions   []regionInfo
	pieces    []piece
	groups    []group
	dontCare  [][]Span
	kept      [][]Span
	pageBytes int
	tokBytes  int
	builtin   bool // made by Builtin: Reshaped can take it to another head dim
	heads     int
	planar    bool // every field in a plane: today's planes model, answered by its own closed forms
	oneBlock  bool // every field's bytes in one piece: judged on the pieces as given
	pages     int  // the pool's pages, where regions must know them (see ForPool)
	bases     []int
}

type fieldInfo struct {
	Field
	size     int // bytes per token, all heads
	units    int // units per head
	ub       int // bytes per unit
	plane    int // plane index; -1 for a placed field
	offset   int // plane fields: offset within the plane record
	img      int // offset of the field's bytes in the token image
	piece    int // the piece holding all of the field's bytes, or -1
	pieceOff int // the field's offset within that piece
	tensor   int
	scale    *fieldInfo // a quantized field's stored scale
	of       *fieldInfo // a scale field's quantized field
	quant    Quant      // e4m3, e5m2: the recipe, resolved
	place    *cplace
	region   int
}

type planeInfo struct {
	fields []*fieldInfo
	stride int // bytes per token in this plane
	offset int // within the page
}

// regionInfo is a compiled region.
type regionInfo struct {
	Region
	pageBytes int
	fields    []*fieldInfo
	planar    bool
}

// A piece is a run of bytes of one slot that is contiguous in the pool
// for every slot: a plane's record, a head's elements in HND, a vector
// of x elements in vLLM's paged K, one byte of a swizzled scale. A
// slot's footprint is one span per piece, and Encode writes one record
// per piece, in the same order.
type piece struct {
	rel    int // offset within the region's page, the slot's own contribution left out
	len    int
	img    int // offset in the token image
	fields []string
	f      *fieldInfo // a composite piece's unit: its field, head, unit
	h, u   int
}

// A group is the pieces one slot mode moves together: a plane, or a
// placed field.
type group struct {
	region    int
	place     *cplace // nil for a plane
	stride    int     // a plane's bytes per token
	composite bool    // the slot shares a mode: each piece is placed alone
	first, n  int
}

// ErrInvalid is wrapped by every validation error.
var ErrInvalid = errors.New("invalid layout")

func invalid(l *Layout, format string, args ...any) error {
	return fmt.Errorf("%w %q: %s", ErrInvalid, l.Name, fmt.Sprintf(format, args...))
}

// BytesPerToken is the number of bytes one token occupies, all planes.
func (l *Layout) BytesPerToken() int { return l.tokBytes }

// PageBytes is the size of one page, including alignment padding: all
// regions' pages together.
func (l *Layout) PageBytes() int { return l.pageBytes }

// PoolBytes is the size of a pool of the given slot count: whole pages.
func (l *Layout) PoolBytes(slots int) int { return l.Pages(slots) * l.pageBytes }

// Pages is the number of pages needed for slots tokens.
func (l *Layout) Pages(slots int) int { return (slots + l.PageSize - 1) / l.PageSize }

// NumHeads is the KV heads per token of each tensor.
func (l *Layout) NumHeads() int { return l.heads }

// TensorNames lists the input tensors, one name each ("" for the unnamed
// one of a single-tensor layout).
func (l *Layout) TensorNames() []string {
	if len(l.Tensors) == 0 {
		return []string{""}
	}
	return l.Tensors
}

// RowElems is the elements of one token's input: every tensor's heads ×
// head dim.
func (l *Layout) RowElems() int { return len(l.TensorNames()) * l.heads * l.HeadDim }

// RowBytes is the size of one input row: RowElems bf16 (or fp16)
// elements.
func (l *Layout) RowBytes() int { return 2 * l.RowElems() }

// Span is a half-open byte range [Off, Off+Len) relative to the pool base.
type Span struct{ Off, Len int }

// End is the first byte after the span.
func (s Span) End() int { return s.Off + s.Len }

// NumPieces is how many spans a slot's footprint has (its planes, for a
// layout of planes).
func (l *Layout) NumPieces() int { return len(l.pieces) }

// Footprint returns the spans slot owns, one per piece (per plane, for a
// layout of planes), relative to the pool base. Slots may be negative or
// past the end: the spans then fall where a kernel writing that slot
// would land. A layout of several regions must know the pool's size: see
// [Layout.ForPool].
func (l *Layout) Footprint(slot int64) []Span {
	// Small enough to inline, so that a caller's spans may stay on its
	// stack: the oracle asks for every row of every case.
	spans := make([]Span, len(l.pieces))
	l.fillFootprint(spans, slot)
	return spans
}

// FillFootprint is Footprint written into spans, NumPieces long: a
// caller walking many slots reuses one slice.
func (l *Layout) FillFootprint(spans []Span, slot int64) { l.fillFootprint(spans, slot) }

// fillFootprint writes slot's spans.
func (l *Layout) fillFootprint(spans []Span, slot int64) {
	if l.planar {
		l.planeSpans(spans, slot, l.pageBytes)
		return
	}
	l.footprint(spans, slot, nil)
}

// fillPaged writes slot's spans for a page stride of pageBytes.
func (l *Layout) fillPaged(spans []Span, slot int64, pageBytes int) {
	if l.planar {
		l.planeSpans(spans, slot, pageBytes)
		return
	}
	l.footprint(spans, slot, &pageBytes)
}

// planeSpans is the planes model's footprint: one span per plane.
func (l *Layout) planeSpans(spans []Span, slot int64, pageBytes int) {
	page, off := FloorDiv(slot, int64(l.PageSize))
	for i, p := range l.planes {
		spans[i] = Span{int(page)*pageBytes + p.offset + int(off)*p.stride, p.stride}
	}
}

// footprint is the algebra's Footprint; pageBytes, where not nil, replaces
// every region's page stride.
func (l *Layout) footprint(spans []Span, slot int64, pageBytes *int) {
	page, t64 := FloorDiv(slot, int64(l.PageSize))
	t := int(t64)
	bases := l.regionBases(pageBytes)
	for gi := range l.groups {
		g := &l.groups[gi]
		pb := l.regions[g.region].pageBytes
		if pageBytes != nil {
			pb = *pageBytes
		}
		base := bases[g.region] + int(page)*pb
		ps := l.pieces[g.first : g.first+g.n]
		switch {
		case g.place == nil:
			base += t * g.stride
		case g.composite:
			for i, p := range ps {
				spans[g.first+i] = Span{base + g.place.at(t, p.h, p.u), p.len}
			}
			continue
		default:
			base += g.place.slotOff(t)
		}
		for i, p := range ps {
			spans[g.first+i] = Span{base + p.rel, p.len}
		}
	}
}

// regionBases are the regions' offsets in the pool.
func (l *Layout) regionBases(pageBytes *int) []int {
	if pageBytes == nil && l.bases != nil {
		return l.bases
	}
	bases := make([]int, len(l.regions))
	if len(l.regions) > 1 && l.pages == 0 {
		panic(fmt.Sprintf("layout %s has %d regions, placed by the pool's size: bind it with ForPool first", l.Name, len(l.regions)))
	}
	at := 0
	for i, r := range l.regions {
		bases[i] = at
		pb := r.pageBytes
		if pageBytes != nil {
			pb = *pageBytes
		}
		at += l.pages * pb
	}
	return bases
}

// ForPool returns the layout bound to a pool of slots slots: where its
// regions start follows from the pool's pages (vLLM's V pages start after
// all K pages). A layout of one region needs no binding and is returned
// as it is.
func (l *Layout) ForPool(slots int) (*Layout, error) {
	if slots < 1 {
		return nil, fmt.Errorf("layout %s: a pool of %d slots; want at least 1", l.Name, slots)
	}
	if len(l.regions) == 1 {
		return l, nil
	}
	if l.Pages(slots) > MaxPoolBytes/l.pageBytes {
		return nil, fmt.Errorf("layout %s: %d slots make a pool of more than %d bytes", l.Name, slots, MaxPoolBytes)
	}
	c := *l
	c.pages, c.bases = l.Pages(slots), nil
	c.bases = c.regionBases(nil)
	return &c, nil
}

// PageSpans are where pages first..last of a pool of slots slots lie:
// one span, or, for a layout of several regions placed by the pool's
// pages (vLLM's K pages, then V pages), one per region.
func (l *Layout) PageSpans(slots, first, last int) []Span {
	if len(l.regions) <= 1 {
		return []Span{{Off: first * l.pageBytes, Len: (last - first + 1) * l.pageBytes}}
	}
	pages, at := l.Pages(slots), 0
	out := make([]Span, 0, len(l.regions))
	for _, r := range l.regions {
		out = append(out, Span{Off: at + first*r.pageBytes, Len: (last - first + 1) * r.pageBytes})
		at += pages * r.pageBytes
	}
	return out
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
	Plane  int    // piece index (the plane, for a layout of planes)
	Field  string // field name
	Offset int    // byte offset within the piece's record
}

// Locate says which slot, piece and field own pool byte off of a pool of
// slots slots. It returns false for alignment padding, for bytes no unit
// occupies and for bytes past slots.
func (l *Layout) Locate(off int, slots int) (Owner, bool) {
	if off < 0 {
		return Owner{}, false
	}
	if !l.planar {
		return l.locate(off, slots)
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

// locate is the algebra's Locate: find the region, then the field unit.
func (l *Layout) locate(off int, slots int) (Owner, bool) {
	pages := l.Pages(slots)
	at := 0
	for ri := range l.regions {
		r := &l.regions[ri]
		size := pages * r.pageBytes
		if off >= at+size {
			at += size
			continue
		}
		page, rem := (off-at)/r.pageBytes, (off-at)%r.pageBytes
		if r.planar {
			return l.locateInPlanes(page, rem, slots)
		}
		for _, f := range r.fields {
			c, within, ok := l.invert(f, rem)
			if !ok {
				continue
			}
			slot := int64(page*l.PageSize + c[0])
			if slot >= int64(slots) {
				return Owner{}, false
			}
			img := f.img + (c[1]*f.units+c[2])*f.ub + within
			p := sort.Search(len(l.pieces), func(i int) bool { return l.pieces[i].img > img }) - 1
			return Owner{Slot: slot, Plane: p, Field: f.Name, Offset: img - l.pieces[p].img}, true
		}
		return Owner{}, false
	}
	return Owner{}, false
}

// invert finds the unit of f holding byte rem of its region's page.
func (l *Layout) invert(f *fieldInfo, rem int) ([3]int, int, bool) {
	p := f.place
	if rem < p.lo || rem >= p.hi {
		return [3]int{}, 0, false
	}
	if p.radix {
		c, within, ok := p.invert(rem, f.ub)
		if ok && c[0] < l.PageSize && c[1] < l.heads && c[2] < f.units {
			return c, within, true
		}
		return [3]int{}, 0, false
	}
	// A place that is no mixed radix (validated one to one by
	// enumeration): search its units.
	for t := range l.PageSize {
		for h := range l.heads {
			for u := range f.units {
				if o := p.at(t, h, u); rem >= o && rem < o+f.ub {
					return [3]int{t, h, u}, rem - o, true
				}
			}
		}
	}
	return [3]int{}, 0, false
}

// locateInPlanes finds the owner of byte r of page page of the planes.
func (l *Layout) locateInPlanes(page, r, slots int) (Owner, bool) {
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

// UnitOffset is where unit u of head h of a field of slot lives in the
// pool: the algebra's answer for one unit (an element, a byte of two
// e2m1 elements, a group's scale, a pad byte).
func (l *Layout) UnitOffset(field string, slot int64, head, unit int) (int, error) {
	f, ok := l.fields[field]
	if !ok {
		return 0, fmt.Errorf("layout %s has no field %q", l.Name, field)
	}
	if head < 0 || head >= l.heads || unit < 0 || unit >= f.units {
		return 0, fmt.Errorf("layout %s field %s: head %d unit %d; want heads below %d, units below %d", l.Name, field, head, unit, l.heads, f.units)
	}
	page, t := FloorDiv(slot, int64(l.PageSize))
	if f.plane >= 0 {
		p := l.planes[f.plane]
		return int(page)*l.regions[0].pageBytes + p.offset + int(t)*p.stride + f.offset + (head*f.units+unit)*f.ub, nil
	}
	bases := l.regionBases(nil)
	return bases[f.region] + int(page)*l.regions[f.region].pageBytes + f.place.at(int(t), head, unit), nil
}

// Units is how many units a field has per head, and their size in bytes.
func (l *Layout) Units(field string) (units, bytes int, ok bool) {
	f, ok := l.fields[field]
	if !ok {
		return 0, 0, false
	}
	return f.units, f.ub, true
}

// PlaneFields lists the field names of piece i (plane i, for a layout of
// planes) in record order.
func (l *Layout) PlaneFields(i int) []string { return l.pieces[i].fields }

// FieldSpan returns the byte range of a field within its piece's record
// (its plane's, for a layout of planes); ok is false for a field whose
// bytes are spread over several pieces.
func (l *Layout) FieldSpan(name string) (plane int, s Span, ok bool) {
	f, ok := l.fields[name]
	if !ok || f.piece < 0 {
		return 0, Span{}, false
	}
	return f.piece, Span{f.pieceOff, f.size}, true
}

// FootprintPaged is Footprint with another page size in bytes: where a
// kernel that computes the page stride differently puts slot's bytes.
func (l *Layout) FootprintPaged(slot int64, pageBytes int) []Span {
	spans := make([]Span, len(l.pieces))
	l.fillPaged(spans, slot, pageBytes)
	return spans
}

// Rearranged returns the same fields in other planes: the layout a kernel
// that confuses interleaved and packed arrangements writes. Only a layout
// of planes can be rearranged.
func (l *Layout) Rearranged(planes [][]string) (*Layout, error) {
	if !l.planar {
		return nil, fmt.Errorf("layout %s places its fields in regions, not planes: it cannot be rearranged into planes", l.Name)
	}
	c := l.clone()
	c.Planes = planes
	if err := c.compile(); err != nil {
		return nil, err
	}
	return c, nil
}

// clone copies the description (fields and planes deep enough to edit),
// not the compiled state.
func (l *Layout) clone() *Layout {
	return &Layout{Name: l.Name, Doc: l.Doc, HeadDim: l.HeadDim, PageSize: l.PageSize,
		Fields: append([]Field(nil), l.Fields...), Planes: append([][]string(nil), l.Planes...), PageAlign: l.PageAlign,
		Heads: l.Heads, Tensors: l.Tensors, Input: l.Input, Regions: l.Regions, ReservedSlots: l.ReservedSlots, pages: l.pages, builtin: l.builtin}
}
