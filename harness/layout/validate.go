package layout

import (
	"fmt"
	"slices"
)

// Bounds on a layout, so that a bad flag or file is a clear error and
// every size derived from a layout fits an int with room to spare:
// a field's, a token's and a page's bytes are bounded in turn, so no sum
// or product below overflows.
const (
	// MaxHeadDim bounds the head dimension so a bad flag cannot ask for a
	// gigabyte row.
	MaxHeadDim = 8192
	// MaxHeads bounds the KV heads per token.
	MaxHeads = 1024
	// MaxTensors bounds the input tensors.
	MaxTensors = 16
	// MaxPadBytes bounds a pad field.
	MaxPadBytes = 1 << 16
	// MaxTokenBytes bounds a token's bytes over all planes (DeepSeek-V4's
	// largest record is 656 B; 16 heads × 576 × 2 B × K and V is 36 KiB).
	MaxTokenBytes = 1 << 20
	// MaxPageAlign bounds page_align.
	MaxPageAlign = 1 << 30
	// MaxPageBytes bounds a page, alignment included.
	MaxPageBytes = 1 << 32
	// MaxPoolBytes bounds a pool a layout is bound to (see ForPool).
	MaxPoolBytes = 1 << 46
	// maxCheckedUnits bounds the units a validation enumerates where the
	// algebra cannot prove a place one to one.
	maxCheckedUnits = 1 << 24
)

// CheckHeadDim says whether d is a head dimension the harness takes: a
// multiple of 8 up to MaxHeadDim. That covers every head size models ship
// (64, 80, 96, 112, 120, 128, 192, 256, 512, 576); multiples of 8 keep a
// bf16 row a whole number of 16-byte vectors. Plugins may take fewer: the
// bundled CUDA kernels want multiples of 16 and say so.
func CheckHeadDim(d int) error {
	if d < 8 || d%8 != 0 || d > MaxHeadDim {
		return fmt.Errorf("want a multiple of 8 from 8 to %d (64, 120, 128, 576: every head size models use)", MaxHeadDim)
	}
	return nil
}

// compile checks the description and computes the derived geometry.
func (l *Layout) compile() error {
	if l.Name == "" {
		return invalid(l, "no name")
	}
	if err := CheckHeadDim(l.HeadDim); err != nil {
		return invalid(l, "head dim %d: %v", l.HeadDim, err)
	}
	if l.PageSize < 1 || l.PageSize > 1<<16 {
		return invalid(l, "page size %d: want 1..65536 tokens", l.PageSize)
	}
	if err := l.compileShape(); err != nil {
		return err
	}
	if err := l.compileFields(); err != nil {
		return err
	}
	if err := l.compilePlanes(); err != nil {
		return err
	}
	if err := l.compileRegions(); err != nil {
		return err
	}
	return l.compilePieces()
}

// compileShape checks heads, tensors, input format and reserved slots.
func (l *Layout) compileShape() error {
	l.heads = l.Heads
	if l.heads == 0 {
		l.heads = 1
	}
	if l.heads < 1 || l.heads > MaxHeads {
		return invalid(l, "heads %d: want 1 to %d KV heads per token", l.Heads, MaxHeads)
	}
	if len(l.Tensors) > MaxTensors {
		return invalid(l, "%d tensors; want at most %d", len(l.Tensors), MaxTensors)
	}
	for i, t := range l.Tensors {
		if t == "" || slices.Index(l.Tensors, t) != i {
			return invalid(l, "tensor %d: empty or repeated name %q", i, t)
		}
	}
	switch l.Input {
	case "", "bf16", "fp16":
	default:
		return invalid(l, "input %q: want bf16 (the default) or fp16", l.Input)
	}
	if l.ReservedSlots < 0 || l.ReservedSlots > 1<<16 {
		return invalid(l, "reserved_slots %d: want 0 to 65536", l.ReservedSlots)
	}
	if 2*l.RowElems() > MaxTokenBytes {
		return invalid(l, "%d input elements per token; want at most %d bytes of input", l.RowElems(), MaxTokenBytes)
	}
	return nil
}

func (l *Layout) inputFP16() bool { return l.Input == "fp16" }

func (l *Layout) compileFields() error {
	l.fields = make(map[string]*fieldInfo, len(l.Fields))
	l.order = nil // fresh: a copy of a compiled layout shares its slices
	for i := range l.Fields {
		f := &l.Fields[i]
		if f.Name == "" || l.fields[f.Name] != nil {
			return invalid(l, "field %d: empty or repeated name %q", i, f.Name)
		}
		fi := &fieldInfo{Field: *f, plane: -1, piece: -1}
		if err := l.fieldSize(fi); err != nil {
			return err
		}
		if err := l.checkExtras(fi); err != nil {
			return err
		}
		l.fields[f.Name] = fi
		l.order = append(l.order, fi)
	}
	if err := l.linkScales(); err != nil {
		return err
	}
	return l.resolveRecipes()
}

// checkExtras rejects a recipe on a field that quantizes nothing, a pad
// policy on a field that is not padding, a static scale where no scale
// belongs, and an input format the field cannot take.
func (l *Layout) checkExtras(f *fieldInfo) error {
	if f.Recipe != nil && !f.Kind.isQuant() {
		return invalid(l, "field %q: a recipe belongs on an e4m3 or e5m2 field, not a %s one", f.Name, f.Kind)
	}
	if f.Policy != "" && f.Kind != KindPad {
		return invalid(l, "field %q: a policy belongs on a pad field, not a %s one", f.Name, f.Kind)
	}
	if err := f.Policy.check(); err != nil {
		return invalid(l, "field %q: %v", f.Name, err)
	}
	switch f.Static {
	case "":
		if f.Kind == KindE2M1 {
			return invalid(l, "field %q: an e2m1 field takes its global scale from the kernel: add \"static\": %q", f.Name, PerTensor)
		}
	case PerTensor, PerHead:
		if !f.Kind.isQuant() && f.Kind != KindE2M1 {
			return invalid(l, "field %q: a static scale belongs on an e4m3, e5m2 or e2m1 field, not a %s one", f.Name, f.Kind)
		}
	default:
		return invalid(l, "field %q: static %q; want %q or %q", f.Name, f.Static, PerTensor, PerHead)
	}
	names := l.TensorNames()
	f.tensor = 0
	if f.Tensor != "" {
		f.tensor = slices.Index(names, f.Tensor)
		if f.tensor < 0 || len(l.Tensors) == 0 {
			return invalid(l, "field %q: tensor %q; want one of %v", f.Name, f.Tensor, l.Tensors)
		}
	}
	switch {
	case f.Kind == KindBF16 && l.inputFP16():
		return invalid(l, "field %q: bf16 elements from an fp16 input; store fp16 or declare input bf16", f.Name)
	case f.Kind == KindFP16 && !l.inputFP16():
		return invalid(l, "field %q: fp16 elements from a bf16 input; declare \"input\": \"fp16\"", f.Name)
	case (f.Kind.isQuant() || f.Kind == KindE2M1) && l.inputFP16():
		return invalid(l, "field %q: quantizing an fp16 input is not modelled; declare input bf16", f.Name)
	}
	return nil
}

// resolveRecipes turns every e4m3 and e5m2 field's recipe into its
// arithmetic.
func (l *Layout) resolveRecipes() error {
	for _, f := range l.order {
		if !f.Kind.isQuant() {
			continue
		}
		var r Recipe
		if f.Recipe != nil {
			r = *f.Recipe
		}
		var q Quant
		var err error
		if f.Static != "" {
			q, err = r.staticQuant()
		} else {
			q, err = r.Quant(f.scale.Kind)
		}
		if err != nil {
			return invalid(l, "field %q: %v", f.Name, err)
		}
		q.Format = f.Kind.format()
		f.quant = q
	}
	return nil
}

// fieldSize sets a field's units per head, unit size and bytes per token;
// scale fields are sized once linked to their field.
func (l *Layout) fieldSize(f *fieldInfo) error {
	switch f.Kind {
	case KindBF16, KindFP16, KindE4M3, KindE5M2, KindE2M1:
		if f.From < 0 || f.To > l.HeadDim || f.From >= f.To {
			return invalid(l, "field %q: elements [%d,%d) not inside [0,%d)", f.Name, f.From, f.To, l.HeadDim)
		}
		n := f.To - f.From
		if f.Group < 0 || f.Group > n {
			return invalid(l, "field %q: group %d; want 1 to %d elements", f.Name, f.Group, n)
		}
		switch f.Kind {
		case KindBF16, KindFP16:
			f.units, f.ub = n, 2
		case KindE2M1:
			if f.Group <= 0 || f.Group%2 != 0 || n%f.Group != 0 {
				return invalid(l, "field %q: group %d; want an even block size dividing %d elements (NVFP4's is 16)", f.Name, f.Group, n)
			}
			f.units, f.ub = n/2, 1
		default:
			if f.Static == "" && (f.Group <= 0 || n%f.Group != 0) {
				return invalid(l, "field %q: group %d does not divide %d elements", f.Name, f.Group, n)
			}
			if f.Static != "" && f.Group != 0 {
				return invalid(l, "field %q: a static scale covers the head: leave group out", f.Name)
			}
			f.units, f.ub = n, 1
		}
	case KindScaleF32, KindScaleUE8M0, KindScaleE4M3:
		return nil
	case KindPad:
		if f.Bytes <= 0 || f.Bytes > MaxPadBytes {
			return invalid(l, "pad field %q: %d bytes; want 1 to %d", f.Name, f.Bytes, MaxPadBytes)
		}
		f.units, f.ub = f.Bytes, 1
	default:
		return invalid(l, "field %q: unknown kind %q (want bf16, fp16, e4m3, e5m2, e2m1, scale-f32, scale-ue8m0, scale-e4m3 or pad)", f.Name, f.Kind)
	}
	f.size = l.heads * f.units * f.ub
	return nil
}

func (l *Layout) linkScales() error {
	for _, f := range l.order {
		if !f.Kind.isScale() {
			continue
		}
		q := l.fields[f.Of]
		wantQ := q != nil && q.Kind.isQuant() && q.Static == ""
		if f.Kind == KindScaleE4M3 {
			wantQ = q != nil && q.Kind == KindE2M1
		}
		if !wantQ {
			what := "an e4m3 or e5m2 field without a static scale"
			if f.Kind == KindScaleE4M3 {
				what = "an e2m1 field"
			}
			return invalid(l, "scale field %q: %q is not %s", f.Name, f.Of, what)
		}
		if q.scale != nil {
			return invalid(l, "field %q has two scale fields", q.Name)
		}
		if f.Tensor != "" && f.Tensor != q.Tensor {
			return invalid(l, "scale field %q: tensor %q, but its field %q is of tensor %q", f.Name, f.Tensor, q.Name, q.Tensor)
		}
		q.scale, f.of, f.tensor = f, q, q.tensor
		f.units = (q.To - q.From) / q.Group
		f.ub = 1
		if f.Kind == KindScaleF32 {
			f.ub = 4
		}
		f.size = l.heads * f.units * f.ub
	}
	for _, f := range l.order {
		if (f.Kind.isQuant() && f.Static == "" || f.Kind == KindE2M1) && f.scale == nil {
			return invalid(l, "%s field %q has no scale field (or a static scale)", f.Kind, f.Name)
		}
	}
	return nil
}

// compilePlanes lays the fields without a place out in planes, as the
// planes model always has.
func (l *Layout) compilePlanes() error {
	placed := 0
	for _, f := range l.order {
		if f.Place != nil {
			placed++
		}
	}
	if len(l.Planes) == 0 && placed == 0 {
		return invalid(l, "no planes")
	}
	l.planar = placed == 0 && len(l.Regions) == 0
	l.planes = make([]planeInfo, len(l.Planes))
	l.tokBytes = 0
	for i, names := range l.Planes {
		p := &l.planes[i]
		for _, name := range names {
			f := l.fields[name]
			if f == nil || f.plane >= 0 || f.Place != nil {
				return invalid(l, "plane %d: unknown, repeated or placed field %q", i, name)
			}
			f.plane, f.offset = i, p.stride
			p.stride += f.size
			p.fields = append(p.fields, f)
			if l.tokBytes+p.stride > MaxTokenBytes { // each size is bounded: the sum cannot overflow first
				return invalid(l, "more than %d bytes per token", MaxTokenBytes)
			}
		}
		if p.stride == 0 {
			return invalid(l, "plane %d is empty", i)
		}
		l.tokBytes += p.stride
	}
	for _, f := range l.order {
		if f.plane < 0 && f.Place == nil {
			return invalid(l, "field %q is in no plane and has no place", f.Name)
		}
	}
	return nil
}

// compileRegions compiles the planes' region and every placed field's,
// and checks the placement: every unit inside its region's page, no two
// units on one byte, every unit aligned.
func (l *Layout) compileRegions() error {
	l.regions = nil
	if len(l.planes) > 0 {
		pb, err := l.planesPage()
		if err != nil {
			return err
		}
		l.regions = append(l.regions, regionInfo{Region: Region{Name: ""}, pageBytes: pb, planar: true})
		for _, f := range l.order {
			if f.plane >= 0 {
				l.regions[0].fields = append(l.regions[0].fields, f)
			}
		}
	}
	for _, r := range l.Regions {
		if r.Name == "" || slices.ContainsFunc(l.regions, func(o regionInfo) bool { return o.Name == r.Name }) {
			return invalid(l, "region %q: empty or repeated name (the planes, if any, are the unnamed region)", r.Name)
		}
		if r.PageBytes < 0 || r.PageBytes > MaxPageBytes || r.Align < 0 || r.Align > MaxPageAlign {
			return invalid(l, "region %q: page_bytes %d, align %d; want 0 to %d and 0 to %d", r.Name, r.PageBytes, r.Align, MaxPageBytes, MaxPageAlign)
		}
		l.regions = append(l.regions, regionInfo{Region: r})
	}
	if len(l.Regions) == 0 && !l.planar && len(l.planes) == 0 {
		l.regions = append(l.regions, regionInfo{}) // placed fields, no region named: one unnamed region
	}
	for _, f := range l.order {
		if f.Place == nil {
			continue
		}
		ri := slices.IndexFunc(l.regions, func(r regionInfo) bool { return r.Name == f.Place.Region })
		if ri < 0 || l.regions[ri].planar {
			return invalid(l, "field %q: region %q; want one of the layout's regions %v (not the planes')", f.Name, f.Place.Region, l.regionNames())
		}
		p, err := l.compilePlace(&f.Field, ri, f.ub, [3]int{l.PageSize, l.heads, f.units})
		if err != nil {
			return err
		}
		f.place, f.region = p, ri
		l.regions[ri].fields = append(l.regions[ri].fields, f)
	}
	l.pageBytes, l.bases = 0, nil
	for ri := range l.regions {
		r := &l.regions[ri]
		if len(r.fields) == 0 {
			return invalid(l, "region %q holds no field", r.Name)
		}
		if !r.planar {
			if err := l.checkRegion(r); err != nil {
				return err
			}
		}
		l.pageBytes += r.pageBytes
		if l.pageBytes > MaxPageBytes {
			return invalid(l, "%d bytes per page over all regions; want at most %d: use a smaller page size", l.pageBytes, MaxPageBytes)
		}
	}
	return l.checkRegionAlignment()
}

func (l *Layout) regionNames() []string {
	var out []string
	for _, r := range l.regions {
		if !r.planar {
			out = append(out, r.Name)
		}
	}
	return out
}

// planesPage is the planes' page: P records of each plane in turn,
// rounded up to page_align.
func (l *Layout) planesPage() (int, error) {
	off := 0
	for i := range l.planes {
		l.planes[i].offset = off
		off += l.PageSize * l.planes[i].stride
	}
	// off ≤ 65536 pages × MaxTokenBytes: no overflow.
	if l.PageAlign < 0 || l.PageAlign > MaxPageAlign {
		return 0, invalid(l, "page align %d; want 0 to %d", l.PageAlign, MaxPageAlign)
	}
	if a := l.PageAlign; a > 0 {
		off = (off + a - 1) / a * a
	}
	if off > MaxPageBytes {
		return 0, invalid(l, "%d bytes per page (%d tokens × %d bytes, aligned); want at most %d: use a smaller page size",
			off, l.PageSize, l.tokBytes, MaxPageBytes)
	}
	return off, nil
}

// align is the alignment a unit of f's kind needs: its size for bf16,
// fp16 and float32, one byte for the rest.
func (f *fieldInfo) align() int { return f.ub }

// checkRegion sizes a region's page and checks its fields' places.
func (l *Layout) checkRegion(r *regionInfo) error {
	reach, maxAlign := 0, 1
	for _, f := range r.fields {
		a := f.align()
		maxAlign = max(maxAlign, a)
		if f.place.base%a != 0 {
			return invalid(l, "field %q: offset %d is not a multiple of %d, a %s unit's alignment", f.Name, f.place.base, a, f.Kind)
		}
		for _, s := range f.place.subs {
			if s.stride%a != 0 {
				return invalid(l, "field %q: stride %d is not a multiple of %d, a %s unit's alignment", f.Name, s.stride, a, f.Kind)
			}
		}
		reach = max(reach, f.place.hi)
	}
	switch {
	case r.PageBytes > 0 && r.PageBytes < reach:
		f := slices.MaxFunc(r.fields, func(a, b *fieldInfo) int { return a.place.hi - b.place.hi })
		return invalid(l, "field %q reaches byte %d of a page of region %q, past its page_bytes %d", f.Name, reach, r.Name, r.PageBytes)
	case r.PageBytes > 0:
		r.pageBytes = r.PageBytes
	default:
		a := r.Align
		if a == 0 {
			a = maxAlign
		}
		r.pageBytes = (reach + a - 1) / a * a
	}
	for _, f := range r.fields {
		if err := l.checkOneToOne(f); err != nil {
			return err
		}
	}
	return l.checkDisjoint(r)
}

// checkRegionAlignment makes every region start aligned for every unit in
// the pool: each page stride a multiple of the largest unit alignment of
// the regions after it.
func (l *Layout) checkRegionAlignment() error {
	need := 1
	for ri := len(l.regions) - 1; ri >= 0; ri-- {
		r := &l.regions[ri]
		if ri < len(l.regions)-1 && r.pageBytes%need != 0 {
			return invalid(l, "region %q: page stride %d is not a multiple of %d, the alignment the regions after it need", r.Name, r.pageBytes, need)
		}
		for _, f := range r.fields {
			need = max(need, f.align())
		}
	}
	return nil
}

// checkOneToOne proves a field's place puts no two of its units on one
// byte: by the mixed radix where its strides form one, else by visiting
// every unit of a page.
func (l *Layout) checkOneToOne(f *fieldInfo) error {
	if f.place.radix {
		return nil
	}
	return l.enumerate([]*fieldInfo{f}, f.place.lo, f.place.hi)
}

// checkDisjoint proves no two fields of a region share a byte: fields
// whose byte ranges do not meet cannot, the rest are enumerated.
func (l *Layout) checkDisjoint(r *regionInfo) error {
	fs := slices.Clone(r.fields)
	slices.SortFunc(fs, func(a, b *fieldInfo) int { return a.place.lo - b.place.lo })
	for i := 0; i < len(fs); {
		j, hi := i+1, fs[i].place.hi
		for j < len(fs) && fs[j].place.lo < hi {
			hi = max(hi, fs[j].place.hi)
			j++
		}
		if j > i+1 {
			if err := l.enumerate(fs[i:j], fs[i].place.lo, hi); err != nil {
				return err
			}
		}
		i = j
	}
	return nil
}

// enumerate visits every unit of the fields over one page, marking the
// bytes [lo, hi) they occupy, and reports the first byte two units share.
func (l *Layout) enumerate(fs []*fieldInfo, lo, hi int) error {
	total := 0
	for _, f := range fs {
		total += l.PageSize * l.heads * f.units
	}
	if total > maxCheckedUnits || hi-lo > 8*maxCheckedUnits {
		return invalid(l, "field %q: its place is no mixed radix and too large (%d units) to check one to one: give strides that nest", fs[0].Name, total)
	}
	type owner struct {
		f       *fieldInfo
		t, h, u int
	}
	seen := make(map[int]owner)
	bits := make([]uint64, (hi-lo+63)/64)
	for _, f := range fs {
		for t := range l.PageSize {
			for h := range l.heads {
				for u := range f.units {
					at := f.place.at(t, h, u)
					for b := at; b < at+f.ub; b++ {
						k := b - lo
						if bits[k/64]&(1<<(k%64)) == 0 {
							bits[k/64] |= 1 << (k % 64)
							seen[b] = owner{f, t, h, u}
							continue
						}
						o := seen[b]
						return invalid(l, "field %q: byte %d of a page of region %q holds its unit (slot %d, head %d, unit %d) and field %q's unit (slot %d, head %d, unit %d)",
							f.Name, b, l.regions[f.region].Name, t, h, u, o.f.Name, o.t, o.h, o.u)
					}
				}
			}
		}
	}
	return nil
}

// compilePieces lays out the token image (the planes' records, then each
// placed field's units in head-major order) and cuts it into pieces: runs
// of units contiguous in the pool for every slot.
func (l *Layout) compilePieces() error {
	l.pieces, l.groups = nil, nil
	img := 0
	for i, p := range l.planes {
		var names []string
		for _, f := range p.fields {
			f.img, f.piece, f.pieceOff = img+f.offset, i, f.offset
			names = append(names, f.Name)
		}
		l.groups = append(l.groups, group{region: 0, stride: p.stride, first: len(l.pieces), n: 1})
		l.pieces = append(l.pieces, piece{rel: p.offset, len: p.stride, img: img, fields: names})
		img += p.stride
	}
	for _, f := range l.order {
		if f.place == nil {
			continue
		}
		f.img = img
		g := group{region: f.region, place: f.place, first: len(l.pieces), composite: f.place.slot < 0 && l.PageSize > 1 && f.place.modesSlot()}
		names := []string{f.Name} // shared by the field's pieces
		for h := range l.heads {
			for u := range f.units {
				if g.composite {
					l.pieces = append(l.pieces, piece{len: f.ub, img: img, fields: names, f: f, h: h, u: u})
				} else if rel, last := f.place.rest(h, u), len(l.pieces)-1; last >= g.first && l.pieces[last].rel+l.pieces[last].len == rel {
					l.pieces[last].len += f.ub
				} else {
					l.pieces = append(l.pieces, piece{rel: rel, len: f.ub, img: img, fields: names})
				}
				img += f.ub
			}
		}
		g.n = len(l.pieces) - g.first
		if g.n == 1 {
			f.piece, f.pieceOff = g.first, 0
		}
		l.groups = append(l.groups, g)
	}
	if img > MaxTokenBytes {
		return invalid(l, "%d bytes per token; want at most %d", img, MaxTokenBytes)
	}
	l.tokBytes = img
	l.oneBlock = true
	for _, f := range l.order {
		l.oneBlock = l.oneBlock && f.piece >= 0
	}
	l.compilePads()
	if len(l.regions) == 1 {
		l.bases = []int{0}
	} else if l.pages > 0 {
		l.bases = l.regionBases(nil)
	}
	return nil
}

// modesSlot reports whether some mode maps the slot (flattened with other
// coordinates, when the place has no slot mode of its own).
func (p *cplace) modesSlot() bool {
	for _, m := range p.modes {
		if slices.Contains(m.of, 0) {
			return true
		}
	}
	return false
}
