package kind

import (
	"fmt"

	"github.com/kvharness/kvharness/harness/layout"
	"github.com/kvharness/kvharness/harness/plugin"
)

// Layouts picks the layouts a run checks: a layout file, one name, or
// every built-in layout the plugin declares ("all").
func Layouts(d *plugin.Description, name, file string, headDim, pageSize int) ([]*layout.Layout, error) {
	return LayoutsHeads(d, name, file, 0, headDim, pageSize)
}

// LayoutsHeads is Layouts with heads KV heads per token for the engines'
// caches (0: each layout's default, 8 for most). Under "all" with heads
// above one, the layouts of one head per token are left out.
func LayoutsHeads(d *plugin.Description, name, file string, heads, headDim, pageSize int) ([]*layout.Layout, error) {
	if file != "" {
		l, err := layout.Load(file, pageSize)
		if err != nil {
			return nil, err
		}
		return []*layout.Layout{l}, nil
	}
	var names []string
	if name == "all" {
		for _, g := range d.Layouts {
			if layout.Describe(g.Layout) != "" {
				names = append(names, g.Layout)
			}
		}
		if len(names) == 0 {
			return nil, fmt.Errorf("plugin %s declares no built-in layout; give --layout-file", d.Name)
		}
	} else {
		names = []string{name}
	}
	var out []*layout.Layout
	for _, n := range names {
		dim := headDim
		if fixed := layout.FixedHeadDim(n); fixed != 0 && dim == layout.DefaultHeadDim {
			dim = fixed
		}
		l, err := layout.BuiltinDims(n, layout.Dims{Heads: heads, HeadDim: dim, PageSize: pageSize})
		if err != nil && name == "all" && heads > 1 && layout.OneHead(n) {
			continue
		}
		if err != nil {
			return nil, err
		}
		out = append(out, l)
	}
	return out, nil
}
