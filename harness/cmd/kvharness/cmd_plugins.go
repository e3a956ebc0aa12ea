package main

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"

	"github.com/kvharness/kvharness/harness/kernels/store"
	"github.com/kvharness/kvharness/harness/layout"
	"github.com/kvharness/kvharness/harness/plugin"
	"github.com/kvharness/kvharness/plugins"
)

const pluginsExamples = `  kvharness plugins
  kvharness plugins --plugin ./my-plugin --head-dim 64 --page-size 16
  kvharness plugins --json
`

func runPlugins(ctx context.Context, e *env, args []string) int {
	fs := flags("plugins", "[--plugin P]... [flags]", pluginsExamples, e)
	names := fs.StringSlice("plugin", plugins.Serving(store.Name), "plugins to describe")
	headDim := fs.Int("head-dim", layout.DefaultHeadDim, "head dimension to ask geometry for")
	pageSize := fs.Int("page-size", layout.DefaultPageSize, "page size to ask geometry for")
	heads := fs.Int("heads", 1, "KV heads per token to ask the engines' K/V layouts' geometry for")
	asJSON := fs.Bool("json", false, "print JSON")
	sums := fs.Bool("sha256", false, "print each plugin's SHA-256 (of its script for a command plugin), for --plugin-sha256")
	if code, ok := parse(fs, args); !ok {
		return code
	}
	if err := noArgs(fs); err != nil {
		return e.errorf("%v", err)
	}
	if err := layout.CheckHeadDim(*headDim); err != nil {
		return e.errorf("plugins: --head-dim %d: %v", *headDim, err)
	}
	if *pageSize < 1 || *pageSize > 1<<16 {
		return e.errorf("plugins: --page-size %d: want 1..65536 tokens", *pageSize)
	}
	if *heads < 1 || *heads > layout.MaxHeads {
		return e.errorf("plugins: --heads %d: want 1..%d", *heads, layout.MaxHeads)
	}
	if *sums {
		return printSums(e, *names)
	}
	var descs []*plugin.Description
	for _, n := range *names {
		s, err := open(ctx, n, "", *headDim, *pageSize, plugin.DefaultCallTimeout)
		if err != nil {
			return e.errorf("%v", err)
		}
		d := s.desc
		if *heads > 1 {
			d, err = s.plugin.Describe(ctx, plugin.Query{HeadDim: *headDim, PageSize: *pageSize, Heads: *heads})
		}
		s.close()
		if err != nil {
			return e.errorf("%v", err)
		}
		descs = append(descs, d)
	}
	dims := layout.Dims{Heads: *heads, HeadDim: *headDim, PageSize: *pageSize}
	if *asJSON {
		writeJSON(e, withLayouts(descs, dims))
		return exitPass
	}
	for i, d := range descs {
		if i > 0 {
			fmt.Fprintln(e.stdout)
		}
		writeDescription(e, d, dims)
	}
	return exitPass
}

// describedJSON is a plugin's description as plugins --json prints it:
// with the layout each engine layout it declares stands for, in the
// layout file form (the placements as shape:stride maps).
type describedJSON struct {
	*plugin.Description
	LayoutModels []json.RawMessage `json:"layout_models,omitempty"`
}

// withLayouts adds to each description the engine layouts it declares,
// built at dims.
func withLayouts(descs []*plugin.Description, dims layout.Dims) []describedJSON {
	out := make([]describedJSON, len(descs))
	for i, d := range descs {
		out[i].Description = d
		for _, g := range d.Layouts {
			if !slices.Contains(layout.ModelNames(), g.Layout) {
				continue // the layouts of planes: the check golden's JSON
			}
			if l, err := builtinAt(g.Layout, dims); err == nil {
				out[i].LayoutModels = append(out[i].LayoutModels, l.JSON())
			}
		}
	}
	return out
}

// builtinAt is the built-in layout name at dims, a layout of one head or
// of a fixed head dim taking its own.
func builtinAt(name string, dims layout.Dims) (*layout.Layout, error) {
	if fixed := layout.FixedHeadDim(name); fixed != 0 && dims.HeadDim == layout.DefaultHeadDim {
		dims.HeadDim = fixed // as check and mutants run it (kind.Layouts)
	}
	if layout.OneHead(name) {
		dims.Heads = 0
	}
	return layout.BuiltinDims(name, dims)
}

func writeDescription(e *env, d *plugin.Description, dims layout.Dims) {
	headDim, pageSize := dims.HeadDim, dims.PageSize
	w := e.stdout
	fmt.Fprintf(w, "%s %s: %s\n", d.Name, d.Version, d.Doc)
	fmt.Fprintf(w, "  kernels: %s\n", joinKernels(d.Kernels))
	fmt.Fprintf(w, "  slots: %d-bit\n", slotBits(d))
	fmt.Fprintf(w, "  layouts (D=%d, P=%d):\n", headDim, pageSize)
	for _, g := range d.Layouts {
		l, lerr := builtinAt(g.Layout, dims)
		mark := ""
		if lerr == nil && (l.BytesPerToken() != g.BytesPerToken || l.PageBytes() != g.BytesPerPage) {
			mark = fmt.Sprintf("  ≠ layout's %d B/token, %d B/page", l.BytesPerToken(), l.PageBytes())
		}
		fmt.Fprintf(w, "    %-10s %4d B/token %7d B/page%s\n", g.Layout, g.BytesPerToken, g.BytesPerPage, mark)
		if r := recipeLine(g, l); r != "" {
			fmt.Fprintf(w, "      recipe %s\n", r)
		}
		if g.PadPolicy != "" {
			fmt.Fprintf(w, "      pads %s (declared, over the layout's)\n", g.PadPolicy)
		}
	}
	if len(d.Variants) == 0 {
		return
	}
	fmt.Fprintf(w, "  variants:\n")
	for _, v := range d.Variants {
		fmt.Fprintf(w, "    %-26s %s\n", v.Name, v.Doc)
	}
}

// slotBits is the declared slot width: 64 when the plugin says nothing.
func slotBits(d *plugin.Description) int {
	if d.SlotBits == 0 {
		return 64
	}
	return d.SlotBits
}

// recipeLine says how a plugin quantizes a layout's fp8 fields: what it
// declared, or the layout's default when it declared nothing, resolved
// against the built-in layout of that name when there is one (l is nil
// otherwise). A layout without fp8 fields has no recipe line.
func recipeLine(g plugin.Geometry, l *layout.Layout) string {
	declared, err := g.Recipe, g.RecipeErr
	if err != nil {
		return "(declared, unreadable): " + err.Error()
	}
	whose := "(declared)"
	if declared == nil {
		whose = "(the layout's default)"
	}
	if l == nil {
		if declared == nil {
			return ""
		}
		return whose + ": " + declared.String()
	}
	if !l.Quantized() {
		if declared != nil {
			return whose + ": " + declared.String() + "  ≠ layout: it has no fp8 fields"
		}
		return ""
	}
	eff, err := l.WithRecipe(declared)
	if err != nil {
		return whose + ": " + declared.String() + "  ≠ layout: " + err.Error()
	}
	for _, f := range eff.Fields {
		if q, ok := eff.Quant(f.Name); ok {
			return whose + ": " + q.Recipe().String()
		}
	}
	return ""
}

func printSums(e *env, names []string) int {
	for _, n := range names {
		spec, err := plugin.ResolveSpec(n)
		if err != nil {
			return e.errorf("%v", err)
		}
		file := spec.Argv[0]
		if script := plugin.ScriptOf(spec.Argv); script != "" {
			file = script // what --plugin-sha256 pins for a command plugin
		}
		sum, err := plugin.FileSHA256(file)
		if err != nil {
			return e.errorf("%v", err)
		}
		fmt.Fprintf(e.stdout, "%x  %s  (%s)\n", sum, n, file)
	}
	return exitPass
}
