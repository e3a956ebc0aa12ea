package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"

	"github.com/kvharness/kvharness/harness/kernels"
	"github.com/kvharness/kvharness/harness/layout"
	"github.com/kvharness/kvharness/harness/plugin"
	"github.com/kvharness/kvharness/harness/protocol"
)

const pluginsExamples = `  kvharness plugins
  kvharness plugins --kernel read
  kvharness plugins --plugin ./my-plugin --head-dim 64 --page-size 16
  kvharness plugins --json
`

func runPlugins(ctx context.Context, e *env, args []string) int {
	fs := flags("plugins", "[--plugin P]... [flags]", pluginsExamples, e)
	names := fs.StringSlice("plugin", nil, "plugins to describe (default: every bundled Go plugin and, in a source tree, the Python examples)")
	kernel := fs.String("kernel", "", "list only the plugins that serve this kernel: "+kernels.Names())
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
	if *kernel != "" {
		if _, err := kernels.Lookup(protocol.Kernel(*kernel)); err != nil {
			return e.errorf("plugins: --kernel %q: want one of %s", *kernel, kernels.Names())
		}
	}
	listed, pyNote := *names, ""
	if !fs.Changed("plugin") {
		listed, pyNote = defaultPlugins()
	}
	if *sums {
		return printSums(e, listed)
	}
	descs, err := describeAll(ctx, listed, layout.Dims{Heads: *heads, HeadDim: *headDim, PageSize: *pageSize})
	if err != nil {
		return e.errorf("%v", err)
	}
	var shown []described
	for _, d := range descs {
		if *kernel == "" || d.desc.Serves(protocol.Kernel(*kernel)) {
			shown = append(shown, d)
		}
	}
	dims := layout.Dims{Heads: *heads, HeadDim: *headDim, PageSize: *pageSize}
	if *asJSON {
		out := make([]*plugin.Description, len(shown))
		for i, d := range shown {
			out[i] = d.desc
		}
		writeJSON(e, withLayouts(out, dims))
		return exitPass
	}
	for i, d := range shown {
		if i > 0 {
			fmt.Fprintln(e.stdout)
		}
		writeDescription(e, d.desc, dims, roleNote(d.arg))
	}
	if pyNote != "" {
		fmt.Fprintf(e.stdout, "\n%s\n", pyNote)
	}
	return exitPass
}

// defaultPlugins are what plugins lists unasked: every bundled Go plugin,
// then the Python examples of the source tree (plugins/python/*/, by their
// manifests), when a python that runs the SDK is found; else note says
// why they are left out.
func defaultPlugins() (names []string, note string) {
	names = plugin.BundledNames()
	examples := pythonExamples()
	if len(examples) == 0 {
		return names, ""
	}
	if _, err := plugin.Python("python3"); err != nil {
		return names, fmt.Sprintf("(%d Python examples in plugins/python not described: %v)", len(examples), err)
	}
	for _, ex := range examples {
		names = append(names, ex.manifest)
	}
	return names, ""
}

// pythonExample is a Python plugin of the source tree: its name (its
// folder's) and its manifest, relative to the working directory.
type pythonExample struct{ name, manifest string }

// pythonExamples are the source tree's Python plugins, by name; none
// outside a source tree.
func pythonExamples() []pythonExample {
	root, ok := plugin.SourceRoot()
	if !ok {
		return nil
	}
	files, _ := filepath.Glob(filepath.Join(root, "plugins", "python", "*", "kvharness-plugin.json"))
	wd, _ := os.Getwd()
	var out []pythonExample
	for _, f := range files {
		if rel, err := filepath.Rel(wd, f); err == nil && wd != "" {
			f = rel
		}
		out = append(out, pythonExample{name: filepath.Base(filepath.Dir(f)), manifest: f})
	}
	return out
}

// described is one plugin's description, by the argument that named it.
type described struct {
	arg  string
	desc *plugin.Description
}

// describeAll starts and describes the plugins a few at a time, the
// listing in their order; the first error, by that order, stops it.
func describeAll(ctx context.Context, names []string, dims layout.Dims) ([]described, error) {
	out := make([]described, len(names))
	errs := make([]error, len(names))
	sem := make(chan struct{}, 4)
	var wg sync.WaitGroup
	for i, n := range names {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sem <- struct{}{}
			defer func() { <-sem }()
			s, err := open(ctx, n, "", dims.HeadDim, dims.PageSize, plugin.DefaultCallTimeout)
			if err != nil {
				errs[i] = err
				return
			}
			defer s.close()
			d := s.desc
			if dims.Heads > 1 {
				d, err = s.plugin.Describe(ctx, plugin.Query{HeadDim: dims.HeadDim, PageSize: dims.PageSize, Heads: dims.Heads})
			}
			out[i], errs[i] = described{arg: n, desc: d}, err
		}()
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return nil, err
		}
	}
	return out, nil
}

// roleNote says what a bundled plugin that is not a kernel under test is
// for, and how to name a plugin that is no bundled name.
func roleNote(arg string) string {
	if b, ok := plugin.BundledByName(arg); ok {
		switch b.Role {
		case plugin.Reference:
			return "kept broken on purpose: " + b.Bug
		case plugin.FaultInjection:
			return "misbehaves on purpose (crashes, hangs, garbage): the harness's fault tests run it"
		}
		return ""
	}
	return "run it: --plugin " + shellQuote(arg)
}

// describedJSON is a plugin's description as plugins --json prints it
// (the plugin's own answer) with, as layout_models, the layout each
// engine cache it declares stands for, in the layout file form (the
// placements as shape:stride maps).
type describedJSON struct {
	*plugin.Description
	LayoutModels []json.RawMessage
}

// MarshalJSON is the description's object with layout_models last.
func (d describedJSON) MarshalJSON() ([]byte, error) {
	b, err := json.Marshal(d.Description)
	if err != nil || len(d.LayoutModels) == 0 {
		return b, err
	}
	models, err := json.Marshal(d.LayoutModels)
	if err != nil {
		return nil, err
	}
	b = bytes.TrimSpace(b)
	if len(b) < 2 || b[len(b)-1] != '}' {
		return nil, fmt.Errorf("plugin %s: its description is no JSON object", d.Name)
	}
	sep := ","
	if len(b) == 2 {
		sep = ""
	}
	return append(append(b[:len(b)-1], sep+`"layout_models":`...), append(models, '}')...), nil
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

// writeDescription prints what a plugin declares at dims; note, when not
// empty, is a line under its name (what it is for, how to name it).
func writeDescription(e *env, d *plugin.Description, dims layout.Dims, note string) {
	headDim, pageSize := dims.HeadDim, dims.PageSize
	w := e.stdout
	fmt.Fprintf(w, "%s %s: %s\n", d.Name, d.Version, d.Doc)
	if note != "" {
		fmt.Fprintf(w, "  %s\n", note)
	}
	fmt.Fprintf(w, "  kernels: %s\n", joinKernels(d.Kernels))
	fmt.Fprintf(w, "  slots: %d-bit\n", slotBits(d))
	if d.PageTable { // a plugin of slot lists alone, the default, goes unsaid
		fmt.Fprintf(w, "  addressing: %s\n", map[bool]string{true: "slots, page-table", false: "page-table"}[d.Slots])
	}
	if d.ReadNonFinite != "" { // a read kernel that declares nothing gets finite keys and queries
		fmt.Fprintf(w, "  read non-finite: %s (±Inf and NaN in queries and keys)\n", d.ReadNonFinite)
	}
	if len(d.Layouts) > 0 {
		fmt.Fprintf(w, "  layouts (D=%d, P=%d):\n", headDim, pageSize)
	}
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
		if len(v.Layouts) > 0 {
			fmt.Fprintf(w, "    %-26s (mutants checks it on %s)\n", "", strings.Join(v.Layouts, ", "))
		}
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
		spec, err := resolve(n)
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
