package layout

import "fmt"

// Bounds on a layout, so that a bad flag or file is a clear error and
// every size derived from a layout fits an int with room to spare:
// a field's, a token's and a page's bytes are bounded in turn, so no sum
// or product below overflows.
const (
	// MaxHeadDim bounds the head dimension so a bad flag cannot ask for a
	// gigabyte row.
	MaxHeadDim = 8192
	// MaxPadBytes bounds a pad field.
	MaxPadBytes = 1 << 16
	// MaxTokenBytes bounds a token's bytes over all planes (DeepSeek-V4's
	// largest record is 656 B).
	MaxTokenBytes = 1 << 20
	// MaxPageAlign bounds page_align.
	MaxPageAlign = 1 << 30
	// MaxPageBytes bounds a page, alignment included.
	MaxPageBytes = 1 << 32
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
	if err := l.compileFields(); err != nil {
		return err
	}
	if err := l.compilePlanes(); err != nil {
		return err
	}
	return l.compilePage()
}

func (l *Layout) compileFields() error {
	l.fields = make(map[string]*fieldInfo, len(l.Fields))
	for i := range l.Fields {
		f := &l.Fields[i]
		if f.Name == "" || l.fields[f.Name] != nil {
			return invalid(l, "field %d: empty or repeated name %q", i, f.Name)
		}
		size, err := l.fieldSize(f)
		if err != nil {
			return err
		}
		if err := l.checkExtras(f); err != nil {
			return err
		}
		l.fields[f.Name] = &fieldInfo{Field: *f, size: size, plane: -1}
	}
	if err := l.linkScales(); err != nil {
		return err
	}
	return l.resolveRecipes()
}

// checkExtras rejects a recipe on a field that quantizes nothing and a
// pad policy on a field that is not padding.
func (l *Layout) checkExtras(f *Field) error {
	if f.Recipe != nil && f.Kind != KindE4M3 {
		return invalid(l, "field %q: a recipe belongs on an e4m3 field, not a %s one", f.Name, f.Kind)
	}
	if f.Policy != "" && f.Kind != KindPad {
		return invalid(l, "field %q: a policy belongs on a pad field, not a %s one", f.Name, f.Kind)
	}
	if err := f.Policy.check(); err != nil {
		return invalid(l, "field %q: %v", f.Name, err)
	}
	return nil
}

// resolveRecipes turns every e4m3 field's recipe into its arithmetic.
func (l *Layout) resolveRecipes() error {
	for i := range l.Fields {
		f := l.fields[l.Fields[i].Name]
		if f.Kind != KindE4M3 {
			continue
		}
		var r Recipe
		if f.Recipe != nil {
			r = *f.Recipe
		}
		q, err := r.Quant(f.scale.Kind)
		if err != nil {
			return invalid(l, "field %q: %v", f.Name, err)
		}
		f.quant = q
	}
	return nil
}

func (l *Layout) fieldSize(f *Field) (int, error) {
	switch f.Kind {
	case KindBF16, KindE4M3:
		if f.From < 0 || f.To > l.HeadDim || f.From >= f.To {
			return 0, invalid(l, "field %q: elements [%d,%d) not inside [0,%d)", f.Name, f.From, f.To, l.HeadDim)
		}
		if f.Group < 0 || f.Group > f.To-f.From {
			return 0, invalid(l, "field %q: group %d; want 1 to %d elements", f.Name, f.Group, f.To-f.From)
		}
		if f.Kind == KindBF16 {
			return 2 * (f.To - f.From), nil
		}
		if f.Group <= 0 || (f.To-f.From)%f.Group != 0 {
			return 0, invalid(l, "field %q: group %d does not divide %d elements", f.Name, f.Group, f.To-f.From)
		}
		return f.To - f.From, nil
	case KindScaleF32, KindScaleUE8M0:
		return 0, nil // sized once linked to its e4m3 field
	case KindPad:
		if f.Bytes <= 0 || f.Bytes > MaxPadBytes {
			return 0, invalid(l, "pad field %q: %d bytes; want 1 to %d", f.Name, f.Bytes, MaxPadBytes)
		}
		return f.Bytes, nil
	}
	return 0, invalid(l, "field %q: unknown kind %q (want bf16, e4m3, scale-f32, scale-ue8m0 or pad)", f.Name, f.Kind)
}

func (l *Layout) linkScales() error {
	for _, f := range l.fields {
		if f.Kind != KindScaleF32 && f.Kind != KindScaleUE8M0 {
			continue
		}
		q := l.fields[f.Of]
		if q == nil || q.Kind != KindE4M3 {
			return invalid(l, "scale field %q: %q is not an e4m3 field", f.Name, f.Of)
		}
		if q.scale != nil {
			return invalid(l, "e4m3 field %q has two scale fields", q.Name)
		}
		q.scale = &f.Field
		groups := (q.To - q.From) / q.Group
		if f.Kind == KindScaleF32 {
			f.size = 4 * groups
		} else {
			f.size = groups
		}
	}
	for _, f := range l.fields {
		if f.Kind == KindE4M3 && f.scale == nil {
			return invalid(l, "e4m3 field %q has no scale field", f.Name)
		}
	}
	return nil
}

func (l *Layout) compilePlanes() error {
	if len(l.Planes) == 0 {
		return invalid(l, "no planes")
	}
	l.planes = make([]planeInfo, len(l.Planes))
	l.tokBytes = 0
	for i, names := range l.Planes {
		p := &l.planes[i]
		for _, name := range names {
			f := l.fields[name]
			if f == nil || f.plane >= 0 {
				return invalid(l, "plane %d: unknown or repeated field %q", i, name)
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
	for _, f := range l.fields {
		if f.plane < 0 {
			return invalid(l, "field %q is in no plane", f.Name)
		}
	}
	return nil
}

func (l *Layout) compilePage() error {
	off := 0
	for i := range l.planes {
		l.planes[i].offset = off
		off += l.PageSize * l.planes[i].stride
	}
	// off ≤ 65536 pages × MaxTokenBytes: no overflow.
	if l.PageAlign < 0 || l.PageAlign > MaxPageAlign {
		return invalid(l, "page align %d; want 0 to %d", l.PageAlign, MaxPageAlign)
	}
	if a := l.PageAlign; a > 0 {
		off = (off + a - 1) / a * a
	}
	if off > MaxPageBytes {
		return invalid(l, "%d bytes per page (%d tokens × %d bytes, aligned); want at most %d: use a smaller page size",
			off, l.PageSize, l.tokBytes, MaxPageBytes)
	}
	l.pageBytes = off
	return nil
}
