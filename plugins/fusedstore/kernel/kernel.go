// Package kernel is the fusedstore plugin: one padding-aware store for every
// layout (bf16 rows, fp8-paged and fp8-rows). It is told the valid count n
// and never touches a padded row, whatever its loc holds. This is the fix
// for the incident. Its variants put back, one at a time, the padding
// guards real kernels got wrong.
package kernel

import (
	"context"
	"fmt"
	"slices"

	"github.com/kvharness/kvharness/harness/sdk"
	"github.com/kvharness/kvharness/harness/sdk/read"
	"github.com/kvharness/kvharness/harness/sdk/store"
	"github.com/kvharness/kvharness/plugins/internal/cpustore"
	"github.com/kvharness/kvharness/plugins/internal/gpustore"
)

var variants = []sdk.Variant{
	{Name: "ignore-count", Doc: "skips only loc < 0 (vLLM's guard): stale padded rows and slot-0 sinks are stored"},
	{Name: "sink-writes", Doc: "treats slot 0 as a harmless sink and stores padded rows that point at it (sglang #33816)"},
	{Name: "minus1-wraps", Doc: "resolves -1 to the last slot as Python indexing does, then stores it (vllm #43810)"},
	{Name: "off-by-one-tail", Doc: "stores rows 0..n-2: the last valid row is dropped"},
	{Name: "slowed", Doc: "correct, but stores every row twice: a regression for kvharness compare to flag", Correct: true},
	{Name: "slowed10", Doc: "correct, but stores the first tenth of the rows (rounded down) again: 10% more work from 10 rows on, a small regression for kvharness compare to flag", Correct: true},
	{Name: "oob-write", Doc: "stores the last valid row 2^32 slots past its own: far outside the arena, where compute-sanitizer's memcheck sees it"},
	{Name: "slot-u16", Doc: "reads slot indices as 16 bits (a uint16 loc): in a pool past 65,536 slots, slot s lands on s mod 65,536"},
	{Name: "slowed30", Doc: "correct, but stores the first 30% of the rows (rounded down) again: 30% more work, a regression between slowed10 and slowed for measuring the smallest one kvharness compare flags", Correct: true},
	{Name: "slowed50", Doc: "correct, but stores the first half of the rows (rounded down) again: 50% more work", Correct: true},
}

// oobSlots is how far past its slot oob-write stores the last valid row:
// terabytes past any allocation of a real pool.
const oobSlots = int64(1) << 32

// stores reports whether row i is stored, and into which slot.
func stores(variant string, i, n int, loc, slots int64) (int64, bool) {
	switch variant {
	case "ignore-count":
		return loc, loc >= 0
	case "sink-writes":
		return loc, i < n || loc == 0
	case "minus1-wraps":
		if loc < 0 {
			return loc + slots, true
		}
		return loc, i < n
	case "off-by-one-tail":
		return loc, i < n-1
	case "oob-write":
		if i == n-1 {
			return loc + oobSlots, true
		}
		return loc, i < n
	case "slot-u16":
		return int64(uint16(loc)), i < n
	}
	return loc, i < n
}

// recipe is the fp8 arithmetic of the fused store: max(1e-4, amax)/448
// and x/s, as the CUDA stores compute it.
var recipe = cpustore.Recipe

func geometry(layout string, d, p int) (cpustore.Geometry, int, error) {
	switch layout {
	case "bf16":
		return cpustore.Rows{Stride: 2 * d, ValueBytes: 2 * d}, 2 * d, nil
	case "fp8-rows":
		return cpustore.Rows{Stride: d + 4, ValueBytes: d}, d + 4, nil
	case "fp8-paged":
		return cpustore.Paged{P: p, ValueBytes: d, ScaleBytes: 4, PageBytes: (d + 4) * p}, d + 4, nil
	}
	return nil, 0, fmt.Errorf("fusedstore has no layout %s", layout)
}

// kernel is the fused store on both backends; gpu caches its compiled
// CUDA kernels (device.go).
type kernel struct {
	gpu gpustore.Kernels
}

// Store implements store.Storer.
func (*kernel) Store(_ context.Context, c *store.Call) error {
	l := c.Pool.Layout
	g, _, err := geometry(l.Name, l.HeadDim, l.PageSize)
	if err != nil {
		return err
	}
	d := l.HeadDim
	work := c.Capacity
	switch c.Variant {
	case "slowed":
		work *= 2 // the same bytes twice: correct, and twice the work
	case "slowed10":
		work += c.Capacity / 10 // the first tenth again: 10% more work
	case "slowed30":
		work += c.Capacity * 3 / 10
	case "slowed50":
		work += c.Capacity / 2
	}
	for i := range work {
		i %= c.Capacity
		slot, ok := stores(c.Variant, i, c.Valid, c.Loc[i], int64(c.Pool.Slots))
		if !ok {
			continue
		}
		value, scale := g.Offsets(slot)
		row := c.Rows[i*d : (i+1)*d]
		if l.Name == "bf16" {
			cpustore.PutBF16(c.Arena, c.Pool.Base+value, row)
		} else {
			cpustore.Exact.PutFP8(c.Arena, c.Pool.Base+value, c.Pool.Base+scale, row)
		}
	}
	return nil
}

// Plugin is what the plugin serves; fuzz tests link it in-process.
var Plugin = sdk.Plugin{
	Name:     "fusedstore",
	Version:  "1.0.0",
	Doc:      "padding-aware store for bf16, fp8-paged and fp8-rows (the fix)",
	Variants: slices.Concat(variants, readVariants), // the store's list first: its order numbers the CUDA store rules
	Geometry: func(_ string, d, p int) []sdk.Geometry {
		return cpustore.Declare([]string{"bf16", "fp8-paged", "fp8-rows"}, p, recipe, func(name string) int {
			_, perToken, _ := geometry(name, d, p)
			return perToken
		})
	},
	Kernel: &kernel{},
	Kinds:  []sdk.Kind{store.Kind, read.Kind},
}
