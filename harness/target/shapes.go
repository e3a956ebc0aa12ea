package target

import (
	"context"
	"slices"

	"github.com/kvharness/kvharness/harness/layout"
	"github.com/kvharness/kvharness/harness/plugin"
	"github.com/kvharness/kvharness/harness/workload"
)

// Accepted asks the plugin, one Describe per candidate, which head dims,
// page sizes and (for an engine cache of several heads) head counts it
// takes layout l at: a head dim where its Describe at
// l's page size lists the layout, a page size where its Describe at l's
// head dim does. A plugin that supports one geometry lists the layout
// there only; the space then says so, and a report what was not
// explored. A candidate l cannot be reshaped to is not asked about, and
// neither is an axis left out (nil): the run pinned it to l's value.
//
// A Describe the plugin refuses (an error it answers on purpose) counts as
// not listing the layout; a crash or a hang is the plugin's fault and is
// returned.
func Accepted(ctx context.Context, p *plugin.Plugin, variant string, l *layout.Layout, headDims, pageSizes, heads []int) (workload.Space, error) {
	h := max(l.NumHeads(), 1)
	s := workload.Space{HeadDims: []int{l.HeadDim}, PageSizes: []int{l.PageSize}}
	if fixed := l.HeadDims(); fixed != nil {
		headDims = nil
	}
	if !l.TakesHeads() {
		heads = nil
	}
	add := func(axis *[]int, v, hs, d, ps int) error {
		if slices.Contains(*axis, v) {
			return nil
		}
		r, err := l.ReshapedHeads(hs, d, ps)
		if err != nil {
			return nil // a shape the layout cannot take: not asked
		}
		ok, err := lists(ctx, p, variant, r)
		if ok {
			*axis = append(*axis, v)
		}
		return err
	}
	for _, d := range headDims {
		if err := add(&s.HeadDims, d, h, d, l.PageSize); err != nil {
			return s, err
		}
	}
	for _, ps := range pageSizes {
		if err := add(&s.PageSizes, ps, h, l.HeadDim, ps); err != nil {
			return s, err
		}
	}
	if heads != nil {
		s.Heads = []int{h}
		for _, n := range heads {
			if err := add(&s.Heads, n, n, l.HeadDim, l.PageSize); err != nil {
				return s, err
			}
		}
		slices.Sort(s.Heads)
	}
	slices.Sort(s.HeadDims)
	slices.Sort(s.PageSizes)
	return s, nil
}

// lists reports whether the plugin's Describe at l's shape lists l.
func lists(ctx context.Context, p *plugin.Plugin, variant string, l *layout.Layout) (bool, error) {
	d, err := p.Describe(ctx, QueryFor(variant, l))
	if f, ok := plugin.AsFault(err); ok && f.Kind == plugin.Refused {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	return slices.ContainsFunc(d.Layouts, func(g plugin.Geometry) bool { return g.Layout == l.Name }), nil
}

// Lists is lists for a caller outside the package: whether the plugin
// lists layout l at l's own shape (heads, head dim, page size).
func Lists(ctx context.Context, p *plugin.Plugin, variant string, l *layout.Layout) (bool, error) {
	return lists(ctx, p, variant, l)
}
