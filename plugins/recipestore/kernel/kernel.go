// Package kernel is the recipestore plugin: fp8 stores written the way
// serving engines write them, each declaring its recipe. As shipped it is
// SGLang's Triton arithmetic — scale = max(amax, 1e-8) / 448 and codes
// x * (1/scale) — for the fp8-rows, fp8-paged and dsv4-main layouts, and
// it never writes the pad byte after DeepSeek-V4's seven ue8m0 scales, as
// SGLang's kernel does not. It declares eps 1e-8 and x*(1/s), and the
// harness judges it by that.
//
// Its variants are the two sides of value judgement: correct kernels with
// other arithmetic that must pass (PyTorch's scale, 32-bit slots), and
// bugs of the classes a tolerance could hide, which must still die (ties
// away from zero, a scale from part of the row, a quotient through bf16,
// a ue8m0 exponent rounded down, an eps left undeclared). Every kernel
// skips padded rows: it is told the valid count.
//
// The arithmetic is written here, from the engines' formulas, not taken
// from the harness's reference encoder: a shared mistake would hide.
package kernel

import (
	"context"
	"math"

	"github.com/kvharness/kvharness/harness/layout"
	"github.com/kvharness/kvharness/harness/sdk"
	"github.com/kvharness/kvharness/harness/sdk/store"
	"github.com/kvharness/kvharness/plugins/internal/fp8"
)

// sglang is the shipped kernel's arithmetic, and what it declares.
var (
	sglang       = arith{eps: 1e-8, recip: true}
	sglangRecipe = &layout.Recipe{Eps: new(1e-8), Quantize: layout.Reciprocal}
)

// variant is one build: its arithmetic and what it declares.
type variant struct {
	sdk.Variant
	arith  arith
	recipe *layout.Recipe // nil: declares nothing, the layout's default holds
}

var builds = []variant{
	{Variant: sdk.Variant{Name: "torch", Correct: true,
		Doc: "PyTorch's arithmetic, declaring nothing: scale = max(amax, 1e-4) * fl32(1/448) (1 ulp from amax/448 on many rows), codes x / scale"},
		arith: arith{eps: 1e-4, torch: true}},
	{Variant: sdk.Variant{Name: "int32-slots", Correct: true, SlotBits: 32,
		Doc: "the shipped kernel reading int32 slot indices, as engines often pass loc"},
		arith: sglang, recipe: sglangRecipe},
	{Variant: sdk.Variant{Name: "eps-undeclared",
		Doc: "the shipped kernel (eps 1e-8) declaring nothing: judged by the default eps 1e-4, every zero and tiny row differs"},
		arith: sglang},
	{Variant: sdk.Variant{Name: "ties-away",
		Doc: "converts with roundf (half away from zero) instead of the hardware's nearest even: only exact ties differ"},
		arith: arith{eps: 1e-8, recip: true, round: tiesAway}, recipe: sglangRecipe},
	{Variant: sdk.Variant{Name: "scale-partial-row",
		Doc: "takes each group's max |x| over its first half only (a reduction that misses half the lanes)"},
		arith: arith{eps: 1e-8, recip: true, partial: true}, recipe: sglangRecipe},
	{Variant: sdk.Variant{Name: "bf16-quotient",
		Doc: "computes x * (1/scale) in bf16 (the reciprocal cast to the input's dtype) before converting"},
		arith: arith{eps: 1e-8, recip: true, round: viaBF16}, recipe: sglangRecipe},
	{Variant: sdk.Variant{Name: "ue8m0-round-down",
		Doc: "dsv4-main: rounds the ue8m0 scale down to a power of two (floor of log2): large codes saturate"},
		arith: arith{eps: 1e-8, recip: true, expDown: true}, recipe: sglangRecipe},
}

// build is a variant's build; "" and unknown names are the shipped kernel.
func build(name string) variant {
	for _, b := range builds {
		if b.Name == name {
			return b
		}
	}
	return variant{arith: sglang, recipe: sglangRecipe}
}

var layouts = []string{"fp8-rows", "fp8-paged", "dsv4-main"}

// store is the kernel on both backends; gpu caches its compiled CUDA
// kernels (device.go).
type storer struct {
	gpu kernels
}

// Store implements store.Storer.
func (*storer) Store(_ context.Context, c *store.Call) error {
	l := c.Pool.Layout
	g, err := placeOf(l.Name, l.HeadDim, l.PageSize)
	if err != nil {
		return err
	}
	a := build(c.Variant).arith
	d := l.HeadDim
	for i := range c.Valid { // told n: padded rows are never touched
		value, scale := g.offsets(c.Loc[i])
		putToken(c.Arena, c.Pool.Base+value, c.Pool.Base+scale, c.Rows[i*d:(i+1)*d], g, a)
	}
	return nil
}

// putToken quantizes one row into its value and scale records. The pad
// byte after dsv4-main's scales is left as it was.
func putToken(arena []byte, value, scale int, row []uint16, g place, a arith) {
	for k := range g.groups {
		group := row[k*g.group : (k+1)*g.group]
		s := a.scale(group, g.ue8m0)
		if g.ue8m0 {
			arena[scale+k] = exponentByte(s)
		} else {
			putFloat32(arena[scale+4*k:], s)
		}
		for j, e := range group {
			arena[value+k*g.group+j] = a.code(fp8.BF16(e), s)
		}
	}
	for j, e := range row[g.codes() : g.codes()+g.rope] {
		at := value + g.codes() + 2*j
		arena[at], arena[at+1] = byte(e), byte(e>>8)
	}
}

func putFloat32(dst []byte, s float32) {
	u := math.Float32bits(s)
	dst[0], dst[1], dst[2], dst[3] = byte(u), byte(u>>8), byte(u>>16), byte(u>>24)
}

// Plugin is what the plugin serves; tests link it in-process.
var Plugin = sdk.Plugin{
	Name:    "recipestore",
	Version: "1.0.0",
	Doc:     "fp8 stores as engines write them (SGLang's eps 1e-8 and x*(1/s), declared; dsv4-main's pad byte left untouched)",
	Variants: func() []sdk.Variant {
		vs := make([]sdk.Variant, len(builds))
		for i, b := range builds {
			vs[i] = b.Variant
		}
		return vs
	}(),
	Geometry: func(variant string, d, p int) []sdk.Geometry {
		r := build(variant).recipe
		var out []sdk.Geometry
		for _, name := range layouts {
			dim := d
			if name == "dsv4-main" {
				dim = 512 // its only head dim, whatever the harness asks
			}
			g, err := placeOf(name, dim, p)
			if err != nil {
				continue
			}
			out = append(out, sdk.Geometry{Layout: name, BytesPerToken: g.bytesPerToken(name), BytesPerPage: g.bytesPerPage(name, p), Recipe: r})
		}
		return out
	},
	Kernel: &storer{},
	Kinds:  []sdk.Kind{store.Kind},
}
