package layout

import (
	"fmt"
	"slices"
	"strings"
)

// Coord names one coordinate of a stored unit within its page: which
// slot of the page, which KV head, which unit of the field. The page
// itself is the region's: see [Region].
type Coord string

// The coordinates a mode maps.
const (
	CoordSlot Coord = "slot" // the token's slot within its page, 0..P-1
	CoordHead Coord = "head" // the KV head, 0..H-1
	// CoordUnit is the field's unit within one head: an element (bf16,
	// fp16, e4m3, e5m2), a byte of two e2m1 elements, a group's scale, a
	// pad byte.
	CoordUnit Coord = "unit"
)

var coords = [...]Coord{CoordSlot, CoordHead, CoordUnit}

func coordIndex(c Coord) int { return slices.Index(coords[:], c) }

// A Map is one mode of a CuTe layout, a shape:stride map: the coordinates Of,
// flattened row-major (the first the most significant) into one index,
// are split colexicographically by Shape (the first sub-mode the fastest)
// and each part multiplied by its Stride, in bytes. One coordinate in one
// mode of one sub-mode is a plain stride (NHD's head: {of [head], shape
// [H], stride [D·2]}); a coordinate split in several sub-modes is a tiled
// or x-split one (vLLM's paged K element: shape [x, D/x], stride [2, P·x·2]);
// several coordinates flattened into one index compose a layout with that
// index (a scale matrix whose rows are slot × head, swizzled in 128-row
// tiles). The shape's product may exceed the flattened extent: the rest
// is padding no unit occupies.
type Map struct {
	Of     []Coord `json:"of"`
	Shape  []int   `json:"shape"`
	Stride []int   `json:"stride"`
}

// A Place is where a field's units live: an offset within a page of a
// region, plus the sum of its modes. Every coordinate of extent above one
// appears in exactly one mode.
type Place struct {
	Region string `json:"region,omitempty"`
	Offset int    `json:"offset,omitempty"`
	Maps   []Map  `json:"maps"`
}

// String writes a place as CuTe does: offset + (shape):(stride) per mode.
func (p Place) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s+%d", p.Region, p.Offset)
	for _, m := range p.Maps {
		fmt.Fprintf(&b, " %v%v:%v", m.Of, m.Shape, m.Stride)
	}
	return b.String()
}

// Bounds on a mode, so that every offset fits an int with room to spare.
const (
	// MaxModeShape bounds a mode's product of shapes.
	MaxModeShape = 1 << 31
	// MaxModes bounds the modes of a place.
	MaxModes = 8
	// MaxSubModes bounds the sub-modes of a mode.
	MaxSubModes = 8
)

// cmode is a compiled mode.
type cmode struct {
	of     []int // coordinate indices, most significant first
	shape  []int
	stride []int
	extent int // the flattened coordinates' extent
	single bool
}

// index flattens the coordinates c (slot, head, unit) row-major.
func (m *cmode) index(c [3]int, ext [3]int) int {
	if len(m.of) == 1 {
		return c[m.of[0]]
	}
	i := 0
	for _, k := range m.of {
		i = i*ext[k] + c[k]
	}
	return i
}

// offset maps an index to bytes: the colexicographic split of i by the
// shape, dotted with the strides; the last sub-mode takes the rest.
func (m *cmode) offset(i int) int {
	if m.single {
		return i * m.stride[0]
	}
	off, last := 0, len(m.shape)-1
	for k := range last {
		n := m.shape[k]
		off += (i % n) * m.stride[k]
		i /= n
	}
	return off + i*m.stride[last]
}

// maxOffset is the largest offset of an index below the extent.
func (m *cmode) maxOffset() int {
	full := 1
	for _, n := range m.shape {
		full *= n
	}
	if full == m.extent || m.extent > 1<<22 {
		// Every sub-mode runs its whole shape (or, past what is worth
		// enumerating, bound it as if it did).
		s := 0
		for k, n := range m.shape {
			s += (n - 1) * m.stride[k]
		}
		return s
	}
	hi := 0
	for i := range m.extent {
		hi = max(hi, m.offset(i))
	}
	return hi
}

// cplace is a compiled place.
type cplace struct {
	region int
	base   int
	modes  []cmode
	slot   int // the mode that maps the slot alone, or -1
	ext    [3]int
	subs   []sub // every sub-mode, largest stride first: the inverse
	radix  bool  // subs form a mixed radix: greedy division inverts them
	lo, hi int   // byte range within the region's page, all slots and units
}

// sub is one sub-mode, for inversion.
type sub struct {
	mode, shape, stride, weight int
}

// at is the byte offset of unit (t, h, u) within the region's page.
func (p *cplace) at(t, h, u int) int {
	c := [3]int{t, h, u}
	off := p.base
	for k := range p.modes {
		m := &p.modes[k]
		off += m.offset(m.index(c, p.ext))
	}
	return off
}

// rest is the offset of unit (h, u) leaving out the slot's mode: the
// unit's place relative to its slot when the slot has a mode of its own.
func (p *cplace) rest(h, u int) int {
	c := [3]int{0, h, u}
	off := p.base
	for k := range p.modes {
		if k == p.slot {
			continue
		}
		m := &p.modes[k]
		off += m.offset(m.index(c, p.ext))
	}
	return off
}

// slotOff is the slot's contribution when it has a mode of its own.
func (p *cplace) slotOff(t int) int {
	if p.slot < 0 {
		return 0
	}
	return p.modes[p.slot].offset(t)
}

// invert finds the unit whose bytes hold offset r of the region's page:
// its coordinates and the byte within the unit. It needs the mixed radix
// (see compile); ub is the unit's size.
func (p *cplace) invert(r, ub int) (c [3]int, within int, ok bool) {
	r -= p.base
	if r < 0 || r >= p.hi-p.base {
		return c, 0, false
	}
	var idx [MaxModes]int
	for _, s := range p.subs {
		d := r / s.stride
		if d >= s.shape {
			return c, 0, false
		}
		r -= d * s.stride
		idx[s.mode] += d * s.weight
	}
	if r >= ub {
		return c, 0, false
	}
	for k := range p.modes {
		m := &p.modes[k]
		i := idx[k]
		if i >= m.extent {
			return c, 0, false
		}
		for j := len(m.of) - 1; j >= 0; j-- {
			e := p.ext[m.of[j]]
			c[m.of[j]] = i % e
			i /= e
		}
	}
	return c, r, true
}

// compilePlace checks a field's place and compiles it for units of ub
// bytes with coordinate extents ext (slot, head, unit). Errors name the
// field.
func (l *Layout) compilePlace(f *Field, region int, ub int, ext [3]int) (*cplace, error) {
	p := &cplace{region: region, base: f.Place.Offset, slot: -1, ext: ext}
	if p.base < 0 || p.base > MaxPageBytes {
		return nil, invalid(l, "field %q: place offset %d; want 0 to %d", f.Name, p.base, MaxPageBytes)
	}
	if len(f.Place.Maps) > MaxModes {
		return nil, invalid(l, "field %q: %d modes; want at most %d", f.Name, len(f.Place.Maps), MaxModes)
	}
	var seen [3]bool
	for k, m := range f.Place.Maps {
		cm, err := l.compileMode(f, k, m, ext, &seen)
		if err != nil {
			return nil, err
		}
		if len(cm.of) == 1 && cm.of[0] == 0 {
			p.slot = k
		}
		p.modes = append(p.modes, cm)
	}
	for i, c := range coords {
		if !seen[i] && ext[i] > 1 {
			return nil, invalid(l, "field %q: no mode maps the %s (%d of them): add a mode with of [%q]", f.Name, c, ext[i], c)
		}
	}
	p.hi = p.base + ub
	for k := range p.modes {
		p.hi += p.modes[k].maxOffset()
	}
	p.lo = p.base
	if p.hi > MaxPageBytes {
		return nil, invalid(l, "field %q: reaches byte %d of its page; want at most %d", f.Name, p.hi, MaxPageBytes)
	}
	p.compileInverse(ub)
	return p, nil
}

func (l *Layout) compileMode(f *Field, k int, m Map, ext [3]int, seen *[3]bool) (cmode, error) {
	var cm cmode
	if len(m.Of) == 0 || len(m.Shape) == 0 || len(m.Shape) != len(m.Stride) || len(m.Shape) > MaxSubModes {
		return cm, invalid(l, "field %q mode %d: want one or more coordinates in of, and 1 to %d shapes with as many strides", f.Name, k, MaxSubModes)
	}
	cm.extent = 1
	for _, c := range m.Of {
		i := coordIndex(c)
		if i < 0 {
			return cm, invalid(l, "field %q mode %d: coordinate %q; want slot, head or unit", f.Name, k, c)
		}
		if seen[i] {
			return cm, invalid(l, "field %q mode %d: the %s is in two modes", f.Name, k, c)
		}
		seen[i] = true
		cm.of = append(cm.of, i)
		cm.extent *= ext[i]
	}
	full := 1
	for j, n := range m.Shape {
		if n < 1 || full > MaxModeShape/n {
			return cm, invalid(l, "field %q mode %d: shape %v; want sizes of 1 or more, product at most %d", f.Name, k, m.Shape, MaxModeShape)
		}
		full *= n
		if s := m.Stride[j]; s < 0 || s > MaxPageBytes {
			return cm, invalid(l, "field %q mode %d: stride %d; want 0 to %d bytes", f.Name, k, s, MaxPageBytes)
		}
	}
	if full < cm.extent {
		return cm, invalid(l, "field %q mode %d: shape %v covers %d indices of %v's %d", f.Name, k, m.Shape, full, m.Of, cm.extent)
	}
	cm.shape, cm.stride = slices.Clone(m.Shape), slices.Clone(m.Stride)
	cm.single = len(cm.shape) == 1
	return cm, nil
}

// compileInverse sorts the sub-modes by stride and says whether they form
// a mixed radix: each stride above the largest offset the smaller ones
// (and the unit's own bytes) reach. Greedy division from the largest
// stride then inverts the place exactly, and the place is one to one.
func (p *cplace) compileInverse(ub int) {
	p.subs = p.subs[:0]
	for k, m := range p.modes {
		w := 1
		for j, n := range m.shape {
			if n > 1 {
				p.subs = append(p.subs, sub{mode: k, shape: n, stride: m.stride[j], weight: w})
			}
			w *= n
		}
	}
	slices.SortFunc(p.subs, func(a, b sub) int { return b.stride - a.stride })
	reach := ub - 1
	p.radix = true
	for i := len(p.subs) - 1; i >= 0; i-- {
		s := p.subs[i]
		if s.stride <= reach {
			p.radix = false
			return
		}
		reach += (s.shape - 1) * s.stride
	}
}

// A dim is one dimension of an engine's tensor as its shape is written:
// the coordinate it indexes and its size. A coordinate split over several
// dims is indexed most significant first, as a reshape of (D/x, x) or of
// (P/16, 16) splits it. Dims of size 1 may be left out.
type dim struct {
	c Coord
	n int
}

// torchPlace places a field as a contiguous tensor of these dims (outer
// to inner) with units of ub bytes: each dim's stride is the product of
// the sizes inside it, as torch computes a contiguous tensor's strides.
// The result is a Place in CuTe's form: one mode per coordinate, its
// sub-modes from the fastest.
func torchPlace(region string, offset, ub int, dims ...dim) *Place {
	strides := make([]int, len(dims))
	s := ub
	for i := len(dims) - 1; i >= 0; i-- {
		strides[i] = s
		s *= dims[i].n
	}
	p := &Place{Region: region, Offset: offset}
	for _, c := range coords {
		m := Map{Of: []Coord{c}}
		for i := len(dims) - 1; i >= 0; i-- {
			if dims[i].c == c {
				m.Shape = append(m.Shape, dims[i].n)
				m.Stride = append(m.Stride, strides[i])
			}
		}
		if len(m.Shape) > 0 {
			p.Maps = append(p.Maps, m)
		}
	}
	return p
}

// extent is the bytes a torchPlace of these dims spans.
func extent(ub int, dims ...dim) int {
	for _, d := range dims {
		ub *= d.n
	}
	return ub
}
