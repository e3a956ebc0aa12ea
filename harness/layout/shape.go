package layout

import "fmt"

// HeadDims is the head dims l can be reshaped to: every one for a
// built-in layout without a fixed head dim (nil; an engine's cache may
// still want a multiple, which Reshaped checks), else l's own (a fixed
// built-in's, a layout file's: its fields name their elements).
func (l *Layout) HeadDims() []int {
	if l.builtin && fixedDim(l.Name) == 0 {
		return nil
	}
	return []int{l.HeadDim}
}

// fixedDim is the head dim a built-in layout or engine cache requires,
// or 0.
func fixedDim(name string) int {
	if m, ok := models[name]; ok {
		return m.fixedDim
	}
	return FixedHeadDim(name)
}

// Reshaped is l at another head dim and page size: the built-in layout
// rebuilt (at l's heads), or a layout file's fields with the new page
// size. Recipes declared on l's fields carry over. A shape l cannot take
// (see HeadDims; an engine cache's multiples) is an error naming it. The
// result is bound to no pool (see ForPool).
func (l *Layout) Reshaped(headDim, pageSize int) (*Layout, error) {
	return l.ReshapedHeads(0, headDim, pageSize)
}

// TakesHeads reports whether l can be reshaped to other head counts: a
// built-in engine cache of several heads per token.
func (l *Layout) TakesHeads() bool {
	return l.builtin && !OneHead(l.Name)
}

// ReshapedHeads is Reshaped at heads KV heads per token too (0: l's
// own); a layout that does not take other counts (see TakesHeads) keeps
// its own and refuses another.
func (l *Layout) ReshapedHeads(heads, headDim, pageSize int) (*Layout, error) {
	own := max(l.Heads, 1)
	if heads == 0 {
		heads = own
	}
	if heads != own && !l.TakesHeads() {
		return nil, fmt.Errorf("%w: layout %q has %d head per token, not %d", ErrInvalid, l.Name, own, heads)
	}
	if heads == own && headDim == l.HeadDim && pageSize == l.PageSize {
		return l, nil
	}
	if dims := l.HeadDims(); dims != nil && headDim != l.HeadDim {
		return nil, fmt.Errorf("%w: layout %q has head dim %d, not %d", ErrInvalid, l.Name, l.HeadDim, headDim)
	}
	if !l.builtin {
		c := l.clone()
		c.PageSize, c.pages = pageSize, 0
		if err := c.compile(); err != nil {
			return nil, err
		}
		return c, nil
	}
	b, err := BuiltinDims(l.Name, Dims{Heads: heads, HeadDim: headDim, PageSize: pageSize})
	if err != nil {
		return nil, err
	}
	c := b.clone()
	for i := range c.Fields {
		if f, ok := l.fields[c.Fields[i].Name]; ok {
			c.Fields[i].Recipe, c.Fields[i].Policy = f.Recipe, f.Policy
		}
	}
	if err := c.compile(); err != nil {
		return nil, err
	}
	return c, nil
}
