package layout

import "fmt"

// HeadDims is the head dims l can be reshaped to: every one for a
// built-in layout without a fixed head dim (nil), else l's own (a fixed
// built-in's, a layout file's: its fields name their elements).
func (l *Layout) HeadDims() []int {
	if l.builtin && FixedHeadDim(l.Name) == 0 {
		return nil
	}
	return []int{l.HeadDim}
}

// Reshaped is l at another head dim and page size: the built-in layout
// rebuilt, or a layout file's fields with the new page size. Recipes
// declared on l's fields carry over. A head dim l cannot take (see
// HeadDims) is an error naming it.
func (l *Layout) Reshaped(headDim, pageSize int) (*Layout, error) {
	if headDim == l.HeadDim && pageSize == l.PageSize {
		return l, nil
	}
	if dims := l.HeadDims(); dims != nil && headDim != l.HeadDim {
		return nil, fmt.Errorf("%w: layout %q has head dim %d, not %d", ErrInvalid, l.Name, l.HeadDim, headDim)
	}
	c := &Layout{Name: l.Name, Doc: l.Doc, HeadDim: headDim, PageSize: pageSize, Planes: l.Planes, PageAlign: l.PageAlign,
		builtin: l.builtin}
	c.Fields = append([]Field(nil), l.Fields...)
	if l.builtin && headDim != l.HeadDim {
		b, err := Builtin(l.Name, headDim, pageSize)
		if err != nil {
			return nil, err
		}
		c.Fields = b.Fields
		for i := range c.Fields {
			if f, ok := l.fields[c.Fields[i].Name]; ok {
				c.Fields[i].Recipe, c.Fields[i].Policy = f.Recipe, f.Policy
			}
		}
	}
	if err := c.compile(); err != nil {
		return nil, err
	}
	return c, nil
}
