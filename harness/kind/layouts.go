package kind

import (
	"fmt"
	"slices"

	"github.com/kvharness/kvharness/harness/layout"
	"github.com/kvharness/kvharness/harness/plugin"
)

// The layout groups --layout takes besides one layout's name.
const (
	// AllLayouts is a run's default: the built-in layouts of one record
	// per slot the plugin declares (bf16, fp8-paged, ...), or, for a
	// plugin that declares none of those, the engine caches it declares.
	AllLayouts = "all"
	// EngineLayouts is every engine cache the plugin declares (vllm-flash,
	// flashinfer-hnd, nvfp4-kv, ...): several heads a token, so slower
	// to check, and asked for by name or as this group.
	EngineLayouts = "engines"
)

// Groups are the layout groups, for help and completion.
var Groups = []string{AllLayouts, EngineLayouts}

// GroupNames is the built-in layouts of group (AllLayouts or
// EngineLayouts) that plugin d declares, in its order; ok is false for a
// name that is no group.
func GroupNames(d *plugin.Description, group string) (names []string, ok bool) {
	var planes, engines []string
	for _, g := range d.Layouts {
		switch {
		case slices.Contains(layout.ModelNames(), g.Layout):
			engines = append(engines, g.Layout)
		case layout.Describe(g.Layout) != "":
			planes = append(planes, g.Layout)
		}
	}
	switch group {
	case AllLayouts:
		if len(planes) == 0 {
			return engines, true
		}
		return planes, true
	case EngineLayouts:
		return engines, true
	}
	return nil, false
}

// Layouts picks the layouts a run checks: a layout file, one name, or a
// group of the built-in layouts the plugin declares (AllLayouts,
// EngineLayouts).
func Layouts(d *plugin.Description, name, file string, headDim, pageSize int) ([]*layout.Layout, error) {
	return LayoutsHeads(d, name, file, 0, headDim, pageSize)
}

// LayoutsHeads is Layouts with heads KV heads per token for the engines'
// caches (0: each layout's default, 8 for most). In a group with heads
// above one, the layouts of one head per token are left out.
func LayoutsHeads(d *plugin.Description, name, file string, heads, headDim, pageSize int) ([]*layout.Layout, error) {
	if file != "" {
		l, err := layout.Load(file, pageSize)
		if err != nil {
			return nil, err
		}
		return []*layout.Layout{l}, nil
	}
	names, group := GroupNames(d, name)
	switch {
	case !group:
		names = []string{name}
	case len(names) == 0 && name == EngineLayouts:
		return nil, fmt.Errorf("plugin %s declares no engine layout (%v); --layout %s checks those", d.Name, layout.ModelNames(), EngineLayouts)
	case len(names) == 0:
		return nil, fmt.Errorf("plugin %s declares no built-in layout; give --layout-file", d.Name)
	}
	var out []*layout.Layout
	for _, n := range names {
		dim := headDim
		if fixed := layout.FixedHeadDim(n); fixed != 0 && dim == layout.DefaultHeadDim {
			dim = fixed
		}
		l, err := layout.BuiltinDims(n, layout.Dims{Heads: heads, HeadDim: dim, PageSize: pageSize})
		if err != nil && group && heads > 1 && layout.OneHead(n) {
			continue
		}
		if err != nil {
			return nil, err
		}
		out = append(out, l)
	}
	return out, nil
}
