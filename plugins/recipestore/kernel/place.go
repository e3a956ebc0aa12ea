package kernel

import "fmt"

// place is where a layout puts one token's bytes, written from the
// engines' own page descriptions rather than from kvharness's layouts: a
// value record (the e4m3 codes, then any bf16 elements) and a scale
// record, each at its page's plane.
//
//   - fp8-rows (vLLM's indexer): one record per slot, D codes then the
//     float32 scale; a row layout is a page of one token here.
//   - fp8-paged (SGLang's indexer): per page of P tokens, P × D codes,
//     then P float32 scales.
//   - dsv4-main (DeepSeek-V4's main KV, SGLang's flashmla page): per page,
//     P records of 448 codes and 64 bf16 rope elements (576 B), then P
//     records of 7 ue8m0 exponents and one byte the kernel never writes;
//     the page is padded to a multiple of 576 B.
type place struct {
	tokens      int // tokens per addressing page
	pageBytes   int // bytes per addressing page
	valueStride int // bytes per token of the value plane
	scaleOff    int // where the scale plane starts in a page
	scaleStride int // bytes per token of the scale plane
	groups      int // scale groups of e4m3 codes
	group       int // codes per group
	ue8m0       bool
	rope        int // bf16 elements after the codes
}

func placeOf(layout string, d, p int) (place, error) {
	switch layout {
	case "fp8-rows":
		return place{tokens: 1, pageBytes: d + 4, valueStride: d + 4, scaleOff: d, scaleStride: 4, groups: 1, group: d}, nil
	case "fp8-paged":
		return place{tokens: p, pageBytes: (d + 4) * p, valueStride: d, scaleOff: d * p, scaleStride: 4, groups: 1, group: d}, nil
	case "dsv4-main":
		if d != 512 {
			return place{}, fmt.Errorf("recipestore stores dsv4-main at head dim 512 (448 nope + 64 rope), not %d", d)
		}
		return place{tokens: p, pageBytes: (p*584 + 575) / 576 * 576, valueStride: 576, scaleOff: 576 * p, scaleStride: 8,
			groups: 7, group: 64, ue8m0: true, rope: 64}, nil
	}
	return place{}, fmt.Errorf("recipestore stores fp8-rows, fp8-paged and dsv4-main, not %s", layout)
}

// offsets is where slot's value and scale records begin, from the pool
// base. The page is the floor of slot / tokens: slot -1 is the last token
// of page -1, as a shift by the page bits gives.
func (g place) offsets(slot int64) (value, scale int) {
	t := int64(g.tokens)
	page, off := slot/t, slot%t
	if off < 0 {
		page, off = page-1, off+t
	}
	base := int(page) * g.pageBytes
	return base + int(off)*g.valueStride, base + g.scaleOff + int(off)*g.scaleStride
}

// codes is the number of e4m3 codes per token.
func (g place) codes() int { return g.groups * g.group }

// bytesPerToken and bytesPerPage are the geometry the kernel declares.
func (g place) bytesPerToken(layout string) int {
	if layout == "fp8-rows" {
		return g.valueStride
	}
	return g.valueStride + g.scaleStride
}

func (g place) bytesPerPage(layout string, p int) int {
	if layout == "fp8-rows" {
		return g.valueStride * p
	}
	return g.pageBytes
}
