// Package kernel is the fusedstore plugin: one padding-aware store for every
// layout (bf16 rows, fp8-paged and fp8-rows). It is told the valid count n
// and never touches a padded row, whatever its loc holds. This is the fix
// for the incident. Its variants put back, one at a time, the padding
// guards real kernels got wrong.
package kernel

import (
	"context"
	"encoding/binary"
	"fmt"
	"math"
	"slices"

	"github.com/kvharness/kvharness/harness/layout"
	"github.com/kvharness/kvharness/harness/protocol/kvpb"
	"github.com/kvharness/kvharness/harness/sdk"
	"github.com/kvharness/kvharness/harness/sdk/read"
	"github.com/kvharness/kvharness/harness/sdk/store"
	"github.com/kvharness/kvharness/plugins/internal/cpustore"
	"github.com/kvharness/kvharness/plugins/internal/enginestore"
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
	{Name: "vec16-no-tail", Doc: "bf16: copies each row in 16-element vectors with no scalar tail: at a head dim that is not a multiple of 16 (120, 72) the last 8 elements are never stored"},
	{Name: "page-size-64", Doc: "fp8-paged: addresses pages of 64 tokens whatever the pool's page size (a page size baked into the address math)"},
	{Name: "offset-int32", Doc: "computes a token's byte offset, slot × bytes per token, in 32-bit integers: past 2 GiB into a pool it wraps, and the row lands 4 GiB before its slot (a crash on the CPU, a silent write on a GPU)"},
	{Name: "denormals-are-zero", Doc: "bf16: stores rows through float32 arithmetic built with denormals flushed to zero (fast math): a subnormal element becomes a zero of its sign"},
	{Name: "zero-row-sign", Doc: "fp8: stores a row whose max |x| is 0 by a fast path of +0 codes and the floor scale: its -0 elements lose their sign"},
	{Name: "nan-pair-scale", Doc: "fp8: quantizes rows in pairs (two rows to a warp) and propagates NaN by a vote over the pair: a NaN in one row, a padded one included, makes its partner's scale and codes NaN (FlashInfer #3057)"},
	// The engine layouts' mistakes (enginestore.Bugs); each leaves the
	// layouts it does not concern stored correctly, and names those it
	// does, where the mutant suite checks it (a default run leaves the
	// engine layouts out).
	{Name: "nhd-hnd-swapped", Doc: "FlashInfer caches: writes NHD where HND is declared and HND where NHD is: the same bytes for one head, wrong for more",
		Layouts: []string{"flashinfer-nhd", "flashinfer-hnd"}},
	{Name: "x-split-other-dtype", Doc: "vLLM paged K: splits the head dim by the other dtype's x (16 elements for bf16, 8 for fp8)",
		Layouts: []string{"vllm-paged", "vllm-paged-fp8"}},
	{Name: "kv-swapped", Doc: "K and V caches: writes K where V goes and V where K goes",
		Layouts: []string{"vllm-flash", "flashinfer-nhd"}},
	{Name: "scale-multiplied", Doc: "static fp8 caches: stores code(x * k_scale) instead of code(x / k_scale)",
		Layouts: []string{"vllm-flash-fp8", "vllm-paged-fp8", "vllm-mla-fp8"}},
	{Name: "e5m2-for-e4m3", Doc: "static fp8 caches declared e4m3 (vllm-flash-fp8, vllm-paged-fp8, vllm-mla-fp8): writes e5m2 codes",
		Layouts: []string{"vllm-flash-fp8", "vllm-paged-fp8", "vllm-mla-fp8"}},
	{Name: "fp4-nibbles-swapped", Doc: "NVFP4 caches: packs the even element into the high nibble",
		Layouts: []string{"nvfp4-kv", "nvfp4-kv-hnd"}},
	{Name: "scale-unswizzled", Doc: "NVFP4 caches: writes each block scale at its row-major index, not vLLM's 4-token swizzle (vllm #49012)",
		Layouts: []string{"nvfp4-kv", "nvfp4-kv-hnd"}},
	{Name: "mxfp8-reserved-write", Doc: "MXFP8 pool: stores padded rows into the reserved slot 0 as NaN codes and 0xFF scales (sglang #35351's missing reserved-slot skip)",
		Layouts: []string{"mxfp8-kv"}},
	{Name: "page-table-last-overrun", Doc: "page-table addressing: bounds each request by kv_last_page_len + 1, so the row at a request's length is stored one slot past its last page's valid entries (or into the page after it)",
		Layouts: []string{"flashinfer-nhd", "flashinfer-hnd"}, Addressing: []kvpb.Addressing{store.ByPageTable}},
}

// engineBugs are the enginestore mistakes of a variant.
func engineBugs(variant string) enginestore.Bugs {
	return enginestore.Bugs{
		SwapNHD:    variant == "nhd-hnd-swapped",
		OtherX:     variant == "x-split-other-dtype",
		SwapKV:     variant == "kv-swapped",
		ScaleMul:   variant == "scale-multiplied",
		E5M2:       variant == "e5m2-for-e4m3",
		NibbleSwap: variant == "fp4-nibbles-swapped",
		Unswizzled: variant == "scale-unswizzled",
	}
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

// bakedPageSize is the page size page-size-64 addresses by.
const bakedPageSize = 64

// geometry is where a variant's kernel puts a token of a layout, and its
// bytes per token: page-size-64 addresses fp8-paged pages as 64 tokens.
func geometry(variant, layout string, d, p int) (cpustore.Geometry, int, error) {
	switch layout {
	case "bf16":
		return cpustore.Rows{Stride: 2 * d, ValueBytes: 2 * d}, 2 * d, nil
	case "fp8-rows":
		return cpustore.Rows{Stride: d + 4, ValueBytes: d}, d + 4, nil
	case "fp8-paged":
		if variant == "page-size-64" {
			p = bakedPageSize
		}
		return cpustore.Paged{P: p, ValueBytes: d, ScaleBytes: 4, PageBytes: (d + 4) * p}, d + 4, nil
	}
	return nil, 0, fmt.Errorf("fusedstore has no layout %s", layout)
}

// kernel is the fused store on both backends; gpu caches its compiled
// CUDA kernels (device.go).
type kernel struct {
	gpu    gpustore.Kernels
	engine enginestore.Device // the engine layouts' CUDA stores
}

// Store implements store.Storer.
func (*kernel) Store(_ context.Context, c *store.Call) error {
	l := c.Pool.Layout
	if c.Table != nil {
		return storeTable(c)
	}
	if _, ok := enginestore.BytesPerToken(l.Name, l.Heads, l.HeadDim); ok {
		return storeEngine(c)
	}
	g, _, err := geometry(c.Variant, l.Name, l.HeadDim, l.PageSize)
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
		if c.Variant == "offset-int32" {
			value, scale = int(int32(value)), int(int32(scale)) // the 32-bit product wraps
		}
		row := c.Rows[i*d : (i+1)*d]
		if l.Name == "bf16" {
			putBF16(c.Variant, c.Arena, c.Pool.Base+value, row)
		} else {
			putFP8(c.Variant, c, i, c.Pool.Base+value, c.Pool.Base+scale, row)
		}
	}
	return nil
}

// putBF16 copies a bf16 row as a variant does: whole, in 16-element
// vectors only (vec16-no-tail), or through flushing arithmetic
// (denormals-are-zero).
func putBF16(variant string, arena []byte, at int, row []uint16) {
	switch variant {
	case "vec16-no-tail":
		row = row[:len(row)/16*16]
	case "denormals-are-zero":
		flushed := make([]uint16, len(row))
		for i, e := range row {
			if e&0x7f80 == 0 {
				e &= 0x8000 // a subnormal (or zero) becomes a zero of its sign
			}
			flushed[i] = e
		}
		row = flushed
	}
	cpustore.PutBF16(arena, at, row)
}

// putFP8 quantizes row i of call c as a variant does: exactly, with a
// +0 fast path for zero rows (zero-row-sign), or with NaN voted over the
// pair of rows a warp holds (nan-pair-scale).
func putFP8(variant string, c *store.Call, i, value, scale int, row []uint16) {
	switch {
	case variant == "zero-row-sign" && layout.Amax(row) == 0:
		clear(c.Arena[value : value+len(row)])
		binary.LittleEndian.PutUint32(c.Arena[scale:], math.Float32bits(layout.ScaleFloor/layout.E4M3Max))
		return
	case variant == "nan-pair-scale" && (hasNaN(c, i) || hasNaN(c, i^1)):
		for k := range row {
			c.Arena[value+k] = 0x7f
		}
		binary.LittleEndian.PutUint32(c.Arena[scale:], 0x7fc00000)
		return
	}
	cpustore.Exact.PutFP8(c.Arena, value, scale, row)
}

// hasNaN reports whether row i of the call's batch (valid or padded)
// holds a NaN; false past the batch.
func hasNaN(c *store.Call, i int) bool {
	d := c.Pool.Layout.HeadDim
	if i >= c.Capacity {
		return false
	}
	for _, e := range c.Rows[i*d : (i+1)*d] {
		if e&0x7fff > 0x7f80 {
			return true
		}
	}
	return false
}

// storeEngine stores an engine layout's rows by the engine's own index
// formulas, the padding decisions as for every layout.
func storeEngine(c *store.Call) error {
	l := c.Pool.Layout
	d := enginestore.Dims{Heads: l.Heads, HeadDim: l.HeadDim, PageSize: l.PageSize, Pages: c.Pool.Pages()}
	bugs := engineBugs(c.Variant)
	for i := range c.Capacity {
		row := c.Rows[i*c.RowElems : (i+1)*c.RowElems]
		slot, ok := stores(c.Variant, i, c.Valid, c.Loc[i], int64(c.Pool.Slots))
		b := bugs
		if c.Variant == "mxfp8-reserved-write" && l.Name == "mxfp8-kv" && i >= c.Valid && c.Loc[i] == 0 {
			slot, ok, b.ReservedNaNs = 0, true, true
		}
		if !ok {
			continue
		}
		if err := enginestore.Store(l.Name, d, c.Arena, c.Pool.Base, slot, row, c.Scales, b); err != nil {
			return err
		}
	}
	return nil
}

// declare is the plugin's geometry: the three layouts of one record per
// slot for one head, and every engine layout.
func declare(_ string, heads, d, p int) []sdk.Geometry {
	var out []sdk.Geometry
	if heads == 1 {
		out = cpustore.Declare([]string{"bf16", "fp8-paged", "fp8-rows"}, p, recipe, func(name string) int {
			_, perToken, _ := geometry("", name, d, p)
			return perToken
		})
	}
	for _, name := range enginestore.Names {
		if n, ok := enginestore.BytesPerToken(name, heads, d); ok && enginestore.Takes(name, heads, d, p) {
			out = append(out, sdk.Geometry{Layout: name, BytesPerToken: n, BytesPerPage: n * p})
		}
	}
	return out
}

// Plugin is what the plugin serves; fuzz tests link it in-process.
var Plugin = sdk.Plugin{
	Name:          "fusedstore",
	Version:       "1.0.0",
	Doc:           "padding-aware store for bf16, fp8-paged and fp8-rows (the fix), and for the engines' K/V caches by their own index formulas",
	Variants:      slices.Concat(variants, readVariants), // the store's list first: its order numbers the CUDA store rules
	GeometryHeads: declare,
	Addressing:    []kvpb.Addressing{store.BySlots, store.ByPageTable},
	Kernel:        &kernel{},
	Kinds:         []sdk.Kind{store.Kind, read.Kind},
	// Its reads score and rank each request alone (a NaN score last), on
	// the CPU and in the CUDA kernel's block per request.
	ReadNonFinite: layout.Contained,
}
