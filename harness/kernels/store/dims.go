package store

import (
	"math/rand"

	"github.com/kvharness/kvharness/harness/layout"
)

// The geometries engines run: KV heads per token (tensor-parallel shards
// leave odd counts), head dims of K/V caches (up to 256, what
// FlashAttention and FlashInfer read; MLA's 576 is its layout's fixed
// dim) and page sizes.
var (
	drawHeads    = []int{1, 2, 4, 8, 16, 3, 5, 7}
	drawHeadDims = []int{64, 96, 128, 192, 256}
	drawPages    = []int{1, 16, 32, 64, 128, 256}
)

// DrawDims draws a geometry the built-in engine layout name takes: its
// heads, head dim and page size from what engines run, retried until the
// layout accepts them (a fixed head dim, multiples of x or of a scale
// block, one head only), falling back to the layout's defaults.
func DrawDims(rng *rand.Rand, name string) layout.Dims {
	for range 64 {
		d := layout.Dims{Heads: drawHeads[rng.Intn(len(drawHeads))], HeadDim: drawHeadDims[rng.Intn(len(drawHeadDims))],
			PageSize: drawPages[rng.Intn(len(drawPages))]}
		if fixed := layout.FixedHeadDim(name); fixed != 0 {
			d.HeadDim = fixed
		}
		if _, err := layout.BuiltinDims(name, d); err == nil {
			return d
		}
		if _, err := layout.BuiltinDims(name, layout.Dims{Heads: 1, HeadDim: d.HeadDim, PageSize: d.PageSize}); err == nil && rng.Intn(2) == 0 {
			return layout.Dims{Heads: 1, HeadDim: d.HeadDim, PageSize: d.PageSize}
		}
	}
	return layout.Dims{}
}
