package layout

// MaxHeadDim bounds the head dimension so a bad flag cannot ask for a
// gigabyte row.
const MaxHeadDim = 8192

// compile checks the description and computes the derived geometry.
func (l *Layout) compile() error {
	if l.Name == "" {
		return invalid(l, "no name")
	}
	if l.HeadDim < 16 || l.HeadDim%16 != 0 || l.HeadDim > MaxHeadDim {
		return invalid(l, "head dim %d: want a multiple of 16 in [16, %d]", l.HeadDim, MaxHeadDim)
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
		if f.Bytes <= 0 {
			return 0, invalid(l, "pad field %q: %d bytes", f.Name, f.Bytes)
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
	if l.PageAlign < 0 {
		return invalid(l, "page align %d", l.PageAlign)
	}
	if a := l.PageAlign; a > 0 {
		off = (off + a - 1) / a * a
	}
	l.pageBytes = off
	return nil
}
