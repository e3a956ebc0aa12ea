// Package kernel is the gostore plugin: a store for every layout (bf16
// rows, fp8-paged and fp8-rows) written against the Go SDK the way a new
// plugin author writes one, on the CPU only. It is told the valid count
// and stores rows 0..n-1.
//
// Its variants are bug classes whose reports once sent their reader the
// wrong way: a byte-order bug that read as padding because one byte
// matched a padded row's, a scale computed from part of the row, a stale
// scale cache that fails only in a warm process, a race that drops a row
// only under load, a tile offset that needs 257 rows. Each must be
// reported as what it is, on a minimal case, under every padding.
package kernel

import (
	"context"
	"encoding/binary"
	"fmt"
	"math"
	"slices"

	"github.com/kvharness/kvharness/harness/layout"
	"github.com/kvharness/kvharness/harness/sdk"
	"github.com/kvharness/kvharness/harness/sdk/read"
	"github.com/kvharness/kvharness/harness/sdk/store"
	"github.com/kvharness/kvharness/harness/sdk/transfer"
	"github.com/kvharness/kvharness/plugins/internal/cpustore"
	"github.com/kvharness/kvharness/plugins/internal/fp8"
)

var variants = []sdk.Variant{
	{Name: "byte-swap", Doc: "stores bf16 elements and float32 scales big-endian: a byte-order bug"},
	{Name: "zero-scale", Doc: "fp8: writes the codes but a zeroed block for the scale"},
	{Name: "half-row-scale", Doc: "fp8: takes the scale from the first half of the row only, so the second half saturates"},
	{Name: "scale-first", Doc: "fp8-rows: writes the scale before the codes (the record's fields in the wrong order)"},
	{Name: "stale-scale-cache", Doc: "fp8: caches each slot's first scale for the life of the process and reuses it for every later row stored there"},
	{Name: "race", Doc: "writes each row from a goroutine of its own and waits a fixed time, not for completion: under load a row is dropped"},
	{Name: "tile-offset", Doc: "works in tiles of 256 rows and reads each later tile's rows one row early: a batch needs 257 rows to show it"},
	{Name: PowerOfTwoRead, Kernel: "read", Correct: true, Doc: "its read takes each fp8 scale as a power of two (the float32's exponent, as an E8M0 reader does) and declares the ue8m0 rule: correct alone, wrong on a cache whose writer stores amax/448"},
}

// PowerOfTwoRead is the variant whose read believes every stored fp8
// scale is a power of two: one side of a scale contract.
const PowerOfTwoRead = "pow2-scale-read"

// Tile is the tile-offset variant's tile: rows [256t, 256t+256).
const Tile = 256

// kernel is the store; cache is the stale-scale-cache variant's memory.
type kernel struct {
	cache scaleCache
	life  lifecycle // the lifecycle variants' memory (lifecycle.go)
	keys  keyCache  // the stale-read-cache variant's memory (read.go)
	sent  resent    // the transfer-resend variant's memory (transfer.go)
}

// Store implements store.Storer.
func (k *kernel) Store(_ context.Context, c *store.Call) error {
	l := c.Pool.Layout
	g, err := geometry(l.Name, l.HeadDim, l.PageSize)
	if err != nil {
		return err
	}
	put := func(i int, src int) { k.put(c, g, c.Loc[i], src) }
	if c.Graph && c.Valid == 0 {
		// a capture: the engine starting afresh, the one moment the
		// stale-read-cache and transfer-resend variants forget
		k.keys.reset()
		k.sent.reset()
	}
	if l.Name == "bf16" && slices.ContainsFunc(lifecycleVariants, func(v sdk.Variant) bool { return v.Name == c.Variant }) {
		k.storeLifecycle(c)
		return nil
	}
	switch c.Variant {
	case "race":
		race(c.Valid, func(i int) { put(i, i) })
	case "tile-offset":
		for i := range c.Valid {
			put(i, tileSource(i))
		}
	default:
		for i := range c.Valid {
			put(i, i)
		}
	}
	return nil
}

// tileSource is the row tile-offset reads for row i: its own in the first
// tile, the one before it in every later tile (the tile's base is taken
// from the previous tile's last row).
func tileSource(i int) int {
	if i < Tile {
		return i
	}
	return i - 1
}

// put stores input row src into slot.
func (k *kernel) put(c *store.Call, g cpustore.Geometry, slot int64, src int) {
	d := c.Pool.Layout.HeadDim
	row := c.Rows[src*d : (src+1)*d]
	value, scale := g.Offsets(slot)
	value, scale = c.Pool.Base+value, c.Pool.Base+scale
	if c.Pool.Layout.Name == "bf16" {
		cpustore.PutBF16(c.Arena, value, row)
		if c.Variant == "byte-swap" {
			swapEach(c.Arena[value:value+2*d], 2)
		}
		return
	}
	s := k.scale(c, slot, row)
	if c.Variant == "scale-first" && c.Pool.Layout.Name == "fp8-rows" {
		value, scale = value+4, value
	}
	for i, e := range row {
		c.Arena[value+i] = fp8.FromFloat32(fp8.BF16(e) / s)
	}
	bits := math.Float32bits(s)
	switch c.Variant {
	case "zero-scale":
		bits = 0
	case "byte-swap":
		binary.BigEndian.PutUint32(c.Arena[scale:], bits)
		return
	}
	binary.LittleEndian.PutUint32(c.Arena[scale:], bits)
}

// scale is the row's scale as the variant computes it.
func (k *kernel) scale(c *store.Call, slot int64, row []uint16) float32 {
	switch c.Variant {
	case "half-row-scale":
		return fp8.Scale(row[:len(row)/2], true)
	case "stale-scale-cache":
		return k.cache.get(poolSlot{c.Pool.Name, slot}, func() float32 { return fp8.Scale(row, true) })
	}
	return fp8.Scale(row, true)
}

// swapEach reverses the bytes of each size-byte element of b.
func swapEach(b []byte, size int) {
	for i := 0; i+size <= len(b); i += size {
		for a, z := i, i+size-1; a < z; a, z = a+1, z-1 {
			b[a], b[z] = b[z], b[a]
		}
	}
}

func geometry(layout string, d, p int) (cpustore.Geometry, error) {
	switch layout {
	case "bf16":
		return cpustore.Rows{Stride: 2 * d, ValueBytes: 2 * d}, nil
	case "fp8-rows":
		return cpustore.Rows{Stride: d + 4, ValueBytes: d}, nil
	case "fp8-paged":
		return cpustore.Paged{P: p, ValueBytes: d, ScaleBytes: 4, PageBytes: (d + 4) * p}, nil
	}
	return nil, fmt.Errorf("gostore has no layout %s", layout)
}

// Plugin is what the plugin serves.
var Plugin = sdk.Plugin{
	Name:     "gostore",
	Version:  "1.0.0",
	Doc:      "a CPU store, read and transfer for bf16, fp8-paged and fp8-rows, as a new plugin author writes one",
	Variants: append(variants, lifecycleVariants...),
	Geometry: func(variant string, d, p int) []sdk.Geometry {
		var r *layout.Recipe // the layouts' default
		if variant == PowerOfTwoRead {
			r = &layout.Recipe{Scale: layout.ScaleUE8M0}
		}
		return []sdk.Geometry{
			{Layout: "bf16", BytesPerToken: 2 * d, BytesPerPage: 2 * d * p},
			{Layout: "fp8-paged", BytesPerToken: d + 4, BytesPerPage: (d + 4) * p, Recipe: r},
			{Layout: "fp8-rows", BytesPerToken: d + 4, BytesPerPage: (d + 4) * p, Recipe: r},
		}
	},
	Kernel: &kernel{},
	Kinds:  []sdk.Kind{store.Kind, read.Kind, transfer.Kind},
	// Its read scores and ranks each request alone (a NaN score last).
	ReadNonFinite: layout.Contained,
}
