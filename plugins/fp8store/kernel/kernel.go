// Package kernel is the fp8store plugin. It quantizes bf16 rows to fp8
// e4m3 with a per-token float32 scale and stores them into the fp8-paged
// (SGLang) or fp8-rows (vLLM) layout, skipping padded rows under every
// convention. Its variants are the fp8 bug classes seen in public trackers.
package kernel

import (
	"context"
	"fmt"
	"slices"

	"github.com/kvharness/kvharness/harness/layout"
	"github.com/kvharness/kvharness/harness/sdk"
	"github.com/kvharness/kvharness/harness/sdk/read"
	"github.com/kvharness/kvharness/harness/sdk/store"
	"github.com/kvharness/kvharness/plugins/internal/cpustore"
	"github.com/kvharness/kvharness/plugins/internal/gpustore"
)

var variants = []sdk.Variant{
	{Name: "scale-interleaved", Doc: "fp8-paged: writes each scale right after its row, as the rows layout does (vLLM #40991)"},
	{Name: "bytes-per-token-elements", Doc: "bytes per token computed as an element count: stride and declared size 128, not 132"},
	{Name: "scale-no-floor", Doc: "scale = max|x|/448 without the 1e-4 floor: a zero row divides by zero"},
	{Name: "round-toward-zero", Doc: "truncates to e4m3 instead of rounding to nearest even"},
}

// recipe is the arithmetic every variant's author believes the kernel
// has: the CUDA stores' max(1e-4, amax)/448 and x/s. A mutant that drops
// the floor or truncates still declares it, and dies by it.
var recipe = cpustore.Recipe

// geometry is where this kernel's code puts a token, per layout and variant.
func geometry(variant, layout string, d, p int) (cpustore.Geometry, int, error) {
	perToken := d + 4
	if variant == "bytes-per-token-elements" {
		perToken = d
	}
	switch {
	case layout == "fp8-rows", layout == "fp8-paged" && variant == "scale-interleaved":
		return cpustore.Rows{Stride: perToken, ValueBytes: d}, perToken, nil
	case layout == "fp8-paged":
		return cpustore.Paged{P: p, ValueBytes: d, ScaleBytes: 4, PageBytes: perToken * p}, perToken, nil
	}
	return nil, 0, fmt.Errorf("fp8store stores fp8-paged and fp8-rows, not %s", layout)
}

func quantizer(variant string) cpustore.Quantizer {
	q := cpustore.Exact
	switch variant {
	case "scale-no-floor":
		q.Floor = false
	case "round-toward-zero":
		q.TowardZero = true
	}
	return q
}

// store is the fp8 store on both backends; gpu caches its compiled CUDA
// kernels (device.go).
type kernel struct {
	gpu gpustore.Kernels
}

// Store implements store.Storer.
func (*kernel) Store(_ context.Context, c *store.Call) error {
	l := c.Pool.Layout
	g, _, err := geometry(c.Variant, l.Name, l.HeadDim, l.PageSize)
	if err != nil {
		return err
	}
	q := quantizer(c.Variant)
	d := l.HeadDim
	for i := range c.Valid { // the kernel is told n: padded rows are never touched
		value, scale := g.Offsets(c.Loc[i])
		q.PutFP8(c.Arena, c.Pool.Base+value, c.Pool.Base+scale, c.Rows[i*d:(i+1)*d])
	}
	return nil
}

// Plugin is what the plugin serves; fuzz tests link it in-process.
var Plugin = sdk.Plugin{
	Name:     "fp8store",
	Version:  "1.0.0",
	Doc:      "fp8 e4m3 + per-token scale store for fp8-paged and fp8-rows, padding-aware",
	Variants: slices.Concat(variants, readVariants), // the store's list first: its order numbers the CUDA store rules
	Geometry: func(variant string, d, p int) []sdk.Geometry {
		return cpustore.Declare([]string{"fp8-paged", "fp8-rows"}, p, recipe, func(name string) int {
			_, perToken, _ := geometry(variant, name, d, p)
			return perToken
		})
	},
	Kernel: &kernel{},
	Kinds:  []sdk.Kind{store.Kind, read.Kind},
	// Its reads score and rank each request alone (a NaN score last), on
	// the CPU and in the CUDA kernel's block per request.
	ReadNonFinite: layout.Contained,
}
