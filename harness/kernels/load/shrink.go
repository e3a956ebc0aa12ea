package load

import (
	"slices"

	"github.com/kvharness/kvharness/harness/workload"
)

// Shrink returns smaller variants of a failing case, most aggressive
// first: fewer layers, fewer buffers, fewer pages, fewer late, failing
// and reader entries (down to the one late copy), then simpler values: the
// first global layer 0, the canonical reading order, low page numbers.
// Every variant is valid when c is and strictly smaller in one of those
// measures, so repeated shrinking ends; the property runner keeps the
// first that still fails the same property.
func Shrink(c *Case) []*Case {
	var out []*Case
	for _, f := range []func(*Case) []*Case{shrinkLayers, shrinkBuffers, shrinkPages, shrinkItems, shrinkValues} {
		out = append(out, f(c)...)
	}
	return out
}

// shrinkLayers drops a layer, shifting the later ones down: a late copy in
// layer 3 of 4 becomes one in layer 1 of 2.
func shrinkLayers(c *Case) []*Case {
	var out []*Case
	for drop := range c.Layers {
		if c.Layers == 1 {
			break
		}
		x := c.Clone()
		x.Layers--
		x.keepItems(renumbered(drop, func(it *Item) *int { return &it.Layer }))
		out = append(out, x)
	}
	return out
}

// keepItems rewrites the case's late, late-input and failing items with
// keep, dropping those it refuses.
func (c *Case) keepItems(keep func(Item) (Item, bool)) {
	c.Late, c.LateInputs, c.Fail = workload.FilterMap(c.Late, keep), workload.FilterMap(c.LateInputs, keep),
		workload.FilterMap(c.Fail, keep)
}

// renumbered is the keep of a dropped layer or page: an item whose index
// (at) is drop goes, one past it moves down by one.
func renumbered(drop int, at func(*Item) *int) func(Item) (Item, bool) {
	return func(it Item) (Item, bool) {
		switch i := at(&it); {
		case *i == drop:
			return it, false
		case *i > drop:
			*i--
		}
		return it, true
	}
}

// shrinkBuffers drops one buffer and whatever names it.
func shrinkBuffers(c *Case) []*Case {
	var out []*Case
	for _, b := range c.Buffers {
		if len(c.Buffers) == 1 {
			break
		}
		x := c.Clone()
		x.Buffers = slices.DeleteFunc(x.Buffers, func(s string) bool { return s == b })
		x.Order = slices.DeleteFunc(x.Order, func(s string) bool { return s == b })
		x.keepItems(func(it Item) (Item, bool) { return it, it.Buffer != b })
		out = append(out, x)
	}
	return out
}

// shrinkPages drops one page, renumbering what names the later ones.
func shrinkPages(c *Case) []*Case {
	var out []*Case
	for drop := range c.Pages {
		if len(c.Pages) == 1 {
			break
		}
		x := c.Clone()
		x.Pages = slices.Delete(x.Pages, drop, drop+1)
		x.keepItems(renumbered(drop, func(it *Item) *int { return &it.Page }))
		x.Readers = nil
		for _, r := range c.Readers {
			switch {
			case r < drop:
				x.Readers = append(x.Readers, r)
			case r > drop:
				x.Readers = append(x.Readers, r-1)
			}
		}
		out = append(out, x)
	}
	return out
}

// shrinkItems drops one late, late-input, failing or reader entry.
func shrinkItems(c *Case) []*Case {
	var out []*Case
	lists := []func(*Case) *[]Item{
		func(x *Case) *[]Item { return &x.Late },
		func(x *Case) *[]Item { return &x.LateInputs },
		func(x *Case) *[]Item { return &x.Fail },
	}
	for _, list := range lists {
		for i := range *list(c) {
			x := c.Clone()
			l := list(x)
			*l = slices.Delete(*l, i, i+1)
			out = append(out, x)
		}
	}
	for i := range c.Readers {
		x := c.Clone()
		x.Readers = slices.Delete(x.Readers, i, i+1)
		out = append(out, x)
	}
	return out
}

// shrinkValues moves values toward their simplest forms.
func shrinkValues(c *Case) []*Case {
	var out []*Case
	if c.FirstLayer > 0 {
		for _, f := range []int{0, c.FirstLayer / 2, c.FirstLayer - 1} {
			if f < c.FirstLayer && (len(out) == 0 || out[len(out)-1].FirstLayer != f) {
				x := c.Clone()
				x.FirstLayer = f
				out = append(out, x)
			}
		}
	}
	if canon := canonicalOrder(c.Buffers); !slices.Equal(c.Order, canon) {
		x := c.Clone()
		x.Order = canon
		out = append(out, x)
	}
	for i, p := range c.Pages {
		for _, q := range []Page{{lowest(c, i, true), p.Dst}, {p.Src, lowest(c, i, false)}} {
			if q != p && (q.Src < p.Src || q.Dst < p.Dst) {
				x := c.Clone()
				x.Pages[i] = q
				out = append(out, x)
			}
		}
	}
	return out
}

// lowest is the lowest page no other page of the case uses on that side
// (of the live pages, in far pools).
func lowest(c *Case, i int, src bool) int {
	used := map[int]bool{}
	for k, p := range c.Pages {
		if k == i {
			continue
		}
		if src {
			used[p.Src] = true
		} else {
			used[p.Dst] = true
		}
	}
	if live := c.Geometry.LivePages(); live != nil {
		for _, n := range live {
			if !used[n] {
				return n
			}
		}
	}
	n := 0
	for used[n] {
		n++
	}
	return n
}
