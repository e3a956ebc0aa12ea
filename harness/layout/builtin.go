package layout

import (
	"fmt"
	"sort"
	"strings"
)

// Defaults match the incident's index-K cache.
const (
	DefaultHeadDim  = 128
	DefaultPageSize = 64
)

// builtin builds a named layout for a head dimension and page size. Fixed
// layouts ignore headDim if it is zero and reject any other value.
type builtin struct {
	doc      string
	fixedDim int
	make     func(d int) ([]Field, [][]string, int)
}

var builtins = map[string]builtin{
	"bf16": {
		doc: "one row of D bf16 elements per slot (2·D bytes)",
		make: func(d int) ([]Field, [][]string, int) {
			return []Field{{Name: "value", Kind: KindBF16, From: 0, To: d}},
				[][]string{{"value"}}, 0
		},
	},
	"fp8-paged": {
		doc: "per page: P records of D e4m3 codes, then P float32 scales (SGLang indexer)",
		make: func(d int) ([]Field, [][]string, int) {
			return fp8Fields(d), [][]string{{"value"}, {"scale"}}, 0
		},
	},
	"fp8-rows": {
		doc: "one record per slot: D e4m3 codes then the float32 scale (vLLM indexer)",
		make: func(d int) ([]Field, [][]string, int) {
			return fp8Fields(d), [][]string{{"value", "scale"}}, 0
		},
	},
	"fp8-ds-mla": {
		doc:      "vLLM fp8_ds_mla: 512 e4m3 + 4 float32 tile scales + 64 bf16 rope = 656 B",
		fixedDim: 576,
		make: func(int) ([]Field, [][]string, int) {
			return []Field{
				{Name: "nope", Kind: KindE4M3, From: 0, To: 512, Group: 128},
				{Name: "scales", Kind: KindScaleF32, Of: "nope"},
				{Name: "rope", Kind: KindBF16, From: 512, To: 576},
			}, [][]string{{"nope", "scales", "rope"}}, 0
		},
	},
	"dsv4-main": {
		doc:      "DeepSeek-V4 main KV: 448 e4m3 + 64 bf16 rope per 576 B record, then 7 ue8m0 scales + 1 pad; pages padded to 576 B",
		fixedDim: 512,
		make: func(int) ([]Field, [][]string, int) {
			return []Field{
				{Name: "nope", Kind: KindE4M3, From: 0, To: 448, Group: 64},
				{Name: "rope", Kind: KindBF16, From: 448, To: 512},
				{Name: "scales", Kind: KindScaleUE8M0, Of: "nope"},
				{Name: "pad", Kind: KindPad, Bytes: 1},
			}, [][]string{{"nope", "rope"}, {"scales", "pad"}}, 576
		},
	},
}

func fp8Fields(d int) []Field {
	return []Field{
		{Name: "value", Kind: KindE4M3, From: 0, To: d, Group: d},
		{Name: "scale", Kind: KindScaleF32, Of: "value"},
	}
}

// Names lists the built-in layouts, sorted.
func Names() []string {
	names := make([]string, 0, len(builtins))
	for n := range builtins {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// Describe returns a built-in layout's one-line description (of a
// layout of planes, or of an engine's cache; see [ModelNames]).
func Describe(name string) string {
	if m, ok := models[name]; ok {
		return m.doc
	}
	return builtins[name].doc
}

// FixedHeadDim returns the head dimension a built-in layout requires, or 0
// when it takes any.
func FixedHeadDim(name string) int {
	if m, ok := models[name]; ok {
		return m.fixedDim
	}
	return builtins[name].fixedDim
}

// BufferBuiltin is Builtin for one buffer of a multi-buffer geometry (the
// load and pd kinds'), its error naming the buffer so that a bad case
// says which of its buffers is wrong.
func BufferBuiltin(buffer, name string, headDim, pageSize int) (*Layout, error) {
	l, err := Builtin(name, headDim, pageSize)
	if err != nil {
		return nil, fmt.Errorf("buffer %s: %w", buffer, err)
	}
	return l, nil
}

// Builtin returns the named built-in layout for a head dimension and page
// size. A zero headDim takes the layout's fixed dimension or the default.
func Builtin(name string, headDim, pageSize int) (*Layout, error) {
	if _, ok := models[name]; ok {
		return BuiltinDims(name, Dims{HeadDim: headDim, PageSize: pageSize})
	}
	b, ok := builtins[name]
	if !ok {
		return nil, fmt.Errorf("%w: unknown layout %q (known: %s; engine caches: %s; or give a layout file)", ErrInvalid, name,
			strings.Join(Names(), " "), strings.Join(ModelNames(), " "))
	}
	if headDim == 0 {
		headDim = DefaultHeadDim
		if b.fixedDim != 0 {
			headDim = b.fixedDim
		}
	}
	if b.fixedDim != 0 && headDim != b.fixedDim {
		return nil, fmt.Errorf("%w: layout %q has head dim %d, not %d", ErrInvalid, name, b.fixedDim, headDim)
	}
	fields, planes, align := b.make(headDim)
	l := &Layout{Name: name, Doc: b.doc, HeadDim: headDim, PageSize: pageSize, Fields: fields, Planes: planes, PageAlign: align,
		builtin: true}
	if err := l.compile(); err != nil {
		return nil, err
	}
	return l, nil
}
