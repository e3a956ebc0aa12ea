package kernel

import (
	"fmt"

	"github.com/kvharness/kvharness/harness/sdk"
)

// pageBytes is this engine's own idea of a page of a layout: the item_len
// of every descriptor of a buffer with that layout. It is written from the
// engines' definitions, not from the harness's layout package, so that the
// harness checks it rather than agrees with itself.
func pageBytes(l sdk.Layout) (int, error) {
	d, p := l.HeadDim, l.PageSize
	switch l.Name {
	case "bf16":
		return 2 * d * p, nil // d bf16 elements per token
	case "fp8-paged", "fp8-rows":
		return (d + 4) * p, nil // d e4m3 codes and one float32 scale per token
	case "fp8-ds-mla":
		return 656 * p, nil // 512 e4m3 + 4 float32 tile scales + 64 bf16 rope
	case "dsv4-main":
		return (584*p + 575) / 576 * 576, nil // 584 B tokens, pages padded to 576 B
	}
	return 0, fmt.Errorf("pdtransfer has no layout %s", l.Name)
}

// fixedDims are the layouts whose head dimension is fixed.
var fixedDims = map[string]int{"fp8-ds-mla": 576, "dsv4-main": 512}

// geometry lists the layouts the engine transfers for a head dimension and
// page size, with its bytes per token and per page.
func geometry(_ string, d, p int) []sdk.Geometry {
	var out []sdk.Geometry
	for _, name := range []string{"bf16", "fp8-paged", "fp8-rows", "fp8-ds-mla", "dsv4-main"} {
		if fixed, ok := fixedDims[name]; ok && fixed != d {
			continue
		}
		pb, _ := pageBytes(sdk.Layout{Name: name, HeadDim: d, PageSize: p})
		perToken := map[string]int{"bf16": 2 * d, "fp8-paged": d + 4, "fp8-rows": d + 4, "fp8-ds-mla": 656, "dsv4-main": 584}[name]
		out = append(out, sdk.Geometry{Layout: name, BytesPerToken: perToken, BytesPerPage: pb})
	}
	return out
}

// PageBytes is this engine's page size of a layout, for other engines
// built on its definitions (pdasync): the item_len of their descriptors.
func PageBytes(l sdk.Layout) (int, error) { return pageBytes(l) }

// Geometry lists the layouts the engine transfers, with its bytes per
// token and per page, for other engines built on its definitions.
func Geometry(variant string, headDim, pageSize int) []sdk.Geometry {
	return geometry(variant, headDim, pageSize)
}
