package target

import (
	"context"
	"slices"

	"github.com/kvharness/kvharness/harness/layout"
	"github.com/kvharness/kvharness/harness/plugin"
	"github.com/kvharness/kvharness/harness/workload"
)

// Accepted asks the plugin, one Describe per candidate, which head dims
// and page sizes it takes layout l at: a head dim where its Describe at
// l's page size lists the layout, a page size where its Describe at l's
// head dim does. A plugin that supports one geometry lists the layout
// there only; the space then says so, and a report what was not
// explored. A candidate l cannot be reshaped to is not asked about, and
// neither is an axis left out (nil): the run pinned it to l's value.
//
// A Describe the plugin refuses (an error it answers on purpose) counts as
// not listing the layout; a crash or a hang is the plugin's fault and is
// returned.
func Accepted(ctx context.Context, p *plugin.Plugin, variant string, l *layout.Layout, headDims, pageSizes []int) (workload.Space, error) {
	s := workload.Space{HeadDims: []int{l.HeadDim}, PageSizes: []int{l.PageSize}}
	if fixed := l.HeadDims(); fixed != nil {
		headDims = nil
	}
	for _, d := range headDims {
		ok, err := lists(ctx, p, variant, l.Name, d, l.PageSize)
		if err != nil {
			return s, err
		}
		if ok && !slices.Contains(s.HeadDims, d) {
			s.HeadDims = append(s.HeadDims, d)
		}
	}
	for _, ps := range pageSizes {
		ok, err := lists(ctx, p, variant, l.Name, l.HeadDim, ps)
		if err != nil {
			return s, err
		}
		if ok && !slices.Contains(s.PageSizes, ps) {
			s.PageSizes = append(s.PageSizes, ps)
		}
	}
	slices.Sort(s.HeadDims)
	slices.Sort(s.PageSizes)
	return s, nil
}

// lists reports whether the plugin's Describe at a head dim and page size
// lists the layout.
func lists(ctx context.Context, p *plugin.Plugin, variant, name string, headDim, pageSize int) (bool, error) {
	d, err := p.Describe(ctx, plugin.Query{Variant: variant, HeadDim: headDim, PageSize: pageSize})
	if f, ok := plugin.AsFault(err); ok && f.Kind == plugin.Refused {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	return slices.ContainsFunc(d.Layouts, func(g plugin.Geometry) bool { return g.Layout == name }), nil
}
