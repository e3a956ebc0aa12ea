package store

import (
	"math/rand"
	"slices"

	"github.com/kvharness/kvharness/harness/layout"
)

// The geometries engines run: KV heads per token (tensor-parallel shards
// leave odd counts), head dims and page sizes.
var (
	drawHeads    = []int{1, 2, 4, 8, 16, 3, 5, 7}
	drawHeadDims = []int{64, 96, 128, 192, 256, 512, 576}
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

// engineBudget is the most bytes a pool of an engine layout takes when
// the user gave no slot count: a 4096-slot pool of 8 heads × 128 bf16 K
// and V. The kind's default slot count is sized for records of a few
// hundred bytes; at 4 KiB a token its pools (three a set, several sets)
// would take gigabytes.
const engineBudget = 16 << 20

// defaultSlotsFor is the default slot count for layout l: slots, or for
// an engine layout (not one of the planes layouts) as many whole pages
// as engineBudget holds, at least two.
func defaultSlotsFor(l *layout.Layout, slots int) int {
	if slices.Contains(layout.Names(), l.Name) {
		return slots
	}
	pages := max(engineBudget/max(l.PageBytes(), 1), 2)
	return min(slots, pages*l.PageSize)
}
