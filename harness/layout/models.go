package layout

import (
	"fmt"
	"sort"
)

// Dims are the sizes a built-in layout is made for: KV heads per token,
// head dimension, page size. Zero takes the layout's default.
type Dims struct {
	Heads, HeadDim, PageSize int
}

// A model is a built-in layout named after the engine cache it mirrors:
// its doc line names the engine and the source it follows.
type model struct {
	doc       string
	heads     int // default heads; 0: one head only
	dim       int // default head dim
	fixedDim  int
	dimMul    int // head dims the layout takes: multiples of this
	pageMul   int // page sizes the layout takes: multiples of this
	make      func(d Dims) *Layout
	onlyHeads int // the only head count the layout takes, or 0
}

// The engines' caches as built-in layouts. A tensor is a token's K or V:
// heads × head dim elements; the pool's regions follow the engine's
// allocations, in order.
var models = map[string]model{
	"vllm-flash": {
		doc:   "vLLM FlashAttention cache (2, num_blocks, P, H, D) bf16: every K page, then every V page (vllm/v1/attention/backends/flash_attn.py; csrc/cache_kernels.cu reshape_and_cache_flash)",
		heads: 8, dim: 128, make: vllmFlash(KindBF16, ""),
	},
	"vllm-flash-fp8": {
		doc:   "vLLM FlashAttention cache, kv_cache_dtype fp8_e4m3: e4m3(x / k_scale), k_scale and v_scale passed in, no scale stored (csrc/quantization/w8a8/fp8/nvidia/quant_utils.cuh scaled_vec_conversion)",
		heads: 8, dim: 128, make: vllmFlash(KindE4M3, PerTensor),
	},
	"vllm-flash-e5m2": {
		doc:   "vLLM FlashAttention cache, kv_cache_dtype fp8_e5m2: e5m2(x / k_scale) with the scales passed in (csrc/quantization/w8a8/fp8/nvidia/quant_utils.cuh)",
		heads: 8, dim: 128, make: vllmFlash(KindE5M2, PerTensor),
	},
	"flashinfer-nhd": {
		doc:   "FlashInfer paged KV cache, NHD: (num_pages, 2, P, H, D) bf16, a page's K then its V (flashinfer/page.py append_paged_kv_cache, kv_layout=\"NHD\")",
		heads: 8, dim: 128, make: flashinfer(false),
	},
	"flashinfer-hnd": {
		doc:   "FlashInfer paged KV cache, HND: (num_pages, 2, H, P, D) bf16 (flashinfer/page.py append_paged_kv_cache, kv_layout=\"HND\")",
		heads: 8, dim: 128, make: flashinfer(true),
	},
	"vllm-paged": {
		doc:   "vLLM paged-attention cache: K (num_blocks, H, D/x, P, x), V (num_blocks, H, D, P), bf16, x = 8 (csrc/cache_kernels.cu reshape_and_cache)",
		heads: 8, dim: 128, dimMul: 8, make: vllmPaged(KindBF16),
	},
	"vllm-paged-fp8": {
		doc:   "vLLM paged-attention cache, fp8: K (num_blocks, H, D/16, P, 16), V (num_blocks, H, D, P), e4m3(x / k_scale) with the scales passed in (csrc/cache_kernels.cu reshape_and_cache)",
		heads: 8, dim: 128, dimMul: 16, make: vllmPaged(KindE4M3),
	},
	"sglang-mha": {
		doc:   "SGLang MHATokenToKVPool: per layer k_buffer and v_buffer of (slots, H, D) bf16, slot 0 the padding sink (python/sglang/srt/mem_cache/memory_pool.py)",
		heads: 8, dim: 128, make: sglangMHA,
	},
	"sglang-indexer-preshuffle": {
		doc: "SGLang DSA indexer K with PRESHUFFLE_TILE 16: per page each token's D e4m3 codes in 16×16 tiles (16 tokens × 16 codes), then P float32 scales (python/sglang/srt/layers/attention/dsa/index_buf_accessor.py)",
		dim: 128, dimMul: 16, pageMul: 16, make: sglangPreshuffle,
		onlyHeads: 1,
	},
	"vllm-mla-fp8": {
		doc:      "vLLM MLA cache (num_blocks, P, 576), fp8: e4m3(x / scale) of the 512 latent and 64 rope elements, scale passed in (csrc/cache_kernels.cu concat_and_cache_mla)",
		fixedDim: 576, make: vllmMLAFP8, onlyHeads: 1,
	},
	"nvfp4-kv": {
		doc:   "vLLM NVFP4 KV cache, NHD: per page [K e2m1 | K block scales | V e2m1 | V block scales], e4m3 scale per 16 in its 4-token swizzle, global scale 1/k_scale (csrc/libtorch_stable/quantization/fp4/nvfp4_kv_cache_kernels.cu swizzle_scale_offset)",
		heads: 8, dim: 128, dimMul: 64, pageMul: 4, make: nvfp4KV(false),
	},
	"nvfp4-kv-hnd": {
		doc:   "vLLM NVFP4 KV cache, HND: the same page with each head's tokens together (csrc/libtorch_stable/quantization/fp4/nvfp4_kv_cache_kernels.cu, is_hnd)",
		heads: 8, dim: 128, dimMul: 64, pageMul: 4, make: nvfp4KV(true),
	},
	"mxfp8-kv": {
		doc:   "SGLang MXFP8 KV pool: e4m3 k_buffer and v_buffer (slots, H, D), a ue8m0 scale per 32 elements in the interleaved (pages, H, 32, P/32, D/32) scale buffers, slot 0 the padding sink (python/sglang/srt/kernels/mxfp8_quant.py quant_store_kv_mxfp8, mxfp8_interleave_sf.py)",
		heads: 8, dim: 128, dimMul: 32, pageMul: 32, make: mxfp8KV,
	},
}

// ModelNames lists the built-in layouts of engines' caches, sorted: those
// [BuiltinDims] builds for any head count.
func ModelNames() []string {
	names := make([]string, 0, len(models))
	for n := range models {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// OneHead reports whether built-in layout name holds one head per token
// whatever the engine's head count: the layouts of planes, MLA's latent
// cache, the DSA indexer.
func OneHead(name string) bool {
	m, ok := models[name]
	return !ok || m.onlyHeads == 1
}

// BuiltinDims returns the named built-in layout for the given heads, head
// dimension and page size (zero: the layout's default). The layouts of
// planes take one head.
func BuiltinDims(name string, d Dims) (*Layout, error) {
	m, ok := models[name]
	if !ok {
		if _, old := builtins[name]; old && d.Heads > 1 {
			return nil, fmt.Errorf("%w: layout %q has one head per token, not %d; give no head count, or use one of the engines' caches of several heads: %v", ErrInvalid, name, d.Heads, ModelNames())
		}
		return Builtin(name, d.HeadDim, d.PageSize)
	}
	if d.Heads == 0 {
		d.Heads = max(m.heads, 1)
	}
	if d.HeadDim == 0 {
		d.HeadDim = max(m.dim, m.fixedDim)
	}
	switch {
	case m.onlyHeads != 0 && d.Heads != m.onlyHeads:
		return nil, fmt.Errorf("%w: layout %q has %d head per token, not %d", ErrInvalid, name, m.onlyHeads, d.Heads)
	case m.fixedDim != 0 && d.HeadDim != m.fixedDim:
		return nil, fmt.Errorf("%w: layout %q has head dim %d, not %d", ErrInvalid, name, m.fixedDim, d.HeadDim)
	case m.dimMul != 0 && d.HeadDim%m.dimMul != 0:
		return nil, fmt.Errorf("%w: layout %q: head dim %d; want a multiple of %d", ErrInvalid, name, d.HeadDim, m.dimMul)
	case m.pageMul != 0 && d.PageSize%m.pageMul != 0:
		return nil, fmt.Errorf("%w: layout %q: page size %d; want a multiple of %d", ErrInvalid, name, d.PageSize, m.pageMul)
	case d.Heads < 1 || d.Heads > MaxHeads:
		return nil, fmt.Errorf("%w: layout %q: %d heads; want 1 to %d", ErrInvalid, name, d.Heads, MaxHeads)
	case d.PageSize < 1 || d.PageSize > 1<<16:
		return nil, fmt.Errorf("%w: layout %q: page size %d; want 1..65536 tokens", ErrInvalid, name, d.PageSize)
	}
	if err := CheckHeadDim(d.HeadDim); err != nil {
		return nil, fmt.Errorf("%w: layout %q: head dim %d: %v", ErrInvalid, name, d.HeadDim, err)
	}
	l := m.make(d)
	l.Name, l.Doc, l.HeadDim, l.PageSize, l.builtin = name, m.doc, d.HeadDim, d.PageSize, true
	if d.Heads > 1 {
		l.Heads = d.Heads
	}
	if err := l.compile(); err != nil {
		return nil, err
	}
	return l, nil
}

var kv = []string{"k", "v"}

// nhd are the dims of a token-major page: (P, H, units).
func nhd(d Dims, units int) []dim {
	return []dim{{CoordSlot, d.PageSize}, {CoordHead, d.Heads}, {CoordUnit, units}}
}

// hnd are the dims of a head-major page: (H, P, units).
func hnd(d Dims, units int) []dim {
	return []dim{{CoordHead, d.Heads}, {CoordSlot, d.PageSize}, {CoordUnit, units}}
}

func elemBytes(k FieldKind) int {
	if k == KindBF16 || k == KindFP16 {
		return 2
	}
	return 1
}

// vllmFlash is K pages, then V pages: two regions, NHD within a page.
func vllmFlash(kind FieldKind, static ScaleGrain) func(Dims) *Layout {
	return func(d Dims) *Layout {
		ub := elemBytes(kind)
		return &Layout{Tensors: kv, Regions: []Region{{Name: "k"}, {Name: "v"}}, Fields: []Field{
			{Name: "k", Kind: kind, Tensor: "k", To: d.HeadDim, Static: static, Place: torchPlace("k", 0, ub, nhd(d, d.HeadDim)...)},
			{Name: "v", Kind: kind, Tensor: "v", To: d.HeadDim, Static: static, Place: torchPlace("v", 0, ub, nhd(d, d.HeadDim)...)},
		}}
	}
}

// flashinfer is one region, a page's K then its V.
func flashinfer(headMajor bool) func(Dims) *Layout {
	return func(d Dims) *Layout {
		dims := nhd(d, d.HeadDim)
		if headMajor {
			dims = hnd(d, d.HeadDim)
		}
		return &Layout{Tensors: kv, Regions: []Region{{Name: "kv"}}, Fields: []Field{
			{Name: "k", Kind: KindBF16, Tensor: "k", To: d.HeadDim, Place: torchPlace("kv", 0, 2, dims...)},
			{Name: "v", Kind: KindBF16, Tensor: "v", To: d.HeadDim, Place: torchPlace("kv", extent(2, dims...), 2, dims...)},
		}}
	}
}

// vllmPaged is the x-split K and the token-strided V: x = 16 bytes of
// elements, so a K vector of x elements is one 16-byte load.
func vllmPaged(kind FieldKind) func(Dims) *Layout {
	return func(d Dims) *Layout {
		ub := elemBytes(kind)
		x := 16 / ub
		var static ScaleGrain
		if kind != KindBF16 {
			static = PerTensor
		}
		return &Layout{Tensors: kv, Regions: []Region{{Name: "k"}, {Name: "v"}}, Fields: []Field{
			{Name: "k", Kind: kind, Tensor: "k", To: d.HeadDim, Static: static, Place: torchPlace("k", 0, ub,
				dim{CoordHead, d.Heads}, dim{CoordUnit, d.HeadDim / x}, dim{CoordSlot, d.PageSize}, dim{CoordUnit, x})},
			{Name: "v", Kind: kind, Tensor: "v", To: d.HeadDim, Static: static, Place: torchPlace("v", 0, ub,
				dim{CoordHead, d.Heads}, dim{CoordUnit, d.HeadDim}, dim{CoordSlot, d.PageSize})},
		}}
	}
}

// sglangMHA is two per-layer buffers of (slots, H, D), slot 0 reserved.
func sglangMHA(d Dims) *Layout {
	l := vllmFlash(KindBF16, "")(d)
	l.ReservedSlots = 1
	return l
}

// sglangPreshuffle is the indexer page with its codes in 16×16 tiles:
// a token's 16-code column tiles 256 bytes apart, 16 tokens' tiles
// interleaved row by row.
func sglangPreshuffle(d Dims) *Layout {
	const tile = 16
	return &Layout{Fields: []Field{
		{Name: "value", Kind: KindE4M3, To: d.HeadDim, Group: d.HeadDim, Place: torchPlace("", 0, 1,
			dim{CoordSlot, d.PageSize / tile}, dim{CoordUnit, d.HeadDim / tile}, dim{CoordSlot, tile}, dim{CoordUnit, tile})},
		{Name: "scale", Kind: KindScaleF32, Of: "value", Place: torchPlace("", d.PageSize*d.HeadDim, 4, dim{CoordSlot, d.PageSize})},
	}}
}

// vllmMLAFP8 is one record of 576 e4m3 codes under the static scale.
func vllmMLAFP8(Dims) *Layout {
	return &Layout{Fields: []Field{
		{Name: "latent", Kind: KindE4M3, From: 0, To: 512, Static: PerTensor},
		{Name: "rope", Kind: KindE4M3, From: 512, To: 576, Static: PerTensor},
	}, Planes: [][]string{{"latent", "rope"}}}
}

// nvfp4KV is vLLM's NVFP4 page, as reshape_and_cache_nvfp4_dispatch in
// vllm-project/vllm csrc/libtorch_stable/quantization/fp4/
// nvfp4_kv_cache_kernels.cu lays it out: [K data | K scales | V data | V
// scales], data and scales each NHD or HND by the cache's strides. Its
// swizzle_scale_offset puts a head's S = D/16 block scales of token t
// (t = 4·t1 + t0, s = (S/4)·s1 + s0) at scale row 4·t1 + s1, column
// 4·s0 + t0: as shape:stride, (4, P/4):(1, 4·row) for the slot and
// (S/4, 4):(4, row) for the block, row = the bytes between scale rows.
// vLLM #49012 reports its NHD output byte-identical to FlashInfer's
// nvfp4_quantize_paged_kv_cache. The kernel's integer S/4 is exact only
// for D a multiple of 64; at other head dims its blocks collide.
func nvfp4KV(headMajor bool) func(Dims) *Layout {
	return func(d Dims) *Layout {
		p, h, s := d.PageSize, d.Heads, d.HeadDim/16
		data := p * h * d.HeadDim / 2
		side := data + p*h*s
		dims := nhd(d, d.HeadDim/2)
		row, headStride := h*s, s // NHD: a token's heads' scales are one row
		if headMajor {
			dims = hnd(d, d.HeadDim/2)
			row, headStride = s, p*s
		}
		scales := func(off int) *Place {
			return &Place{Region: "kv", Offset: off, Maps: []Map{
				{Of: []Coord{CoordSlot}, Shape: []int{4, p / 4}, Stride: []int{1, 4 * row}},
				{Of: []Coord{CoordHead}, Shape: []int{h}, Stride: []int{headStride}},
				{Of: []Coord{CoordUnit}, Shape: []int{s / 4, 4}, Stride: []int{4, row}},
			}}
		}
		return &Layout{Tensors: kv, Regions: []Region{{Name: "kv"}}, Fields: []Field{
			{Name: "k", Kind: KindE2M1, Tensor: "k", To: d.HeadDim, Group: 16, Static: PerTensor, Place: torchPlace("kv", 0, 1, dims...)},
			{Name: "k_scale", Kind: KindScaleE4M3, Of: "k", Place: scales(data)},
			{Name: "v", Kind: KindE2M1, Tensor: "v", To: d.HeadDim, Group: 16, Static: PerTensor, Place: torchPlace("kv", side, 1, dims...)},
			{Name: "v_scale", Kind: KindScaleE4M3, Of: "v", Place: scales(side + data)},
		}}
	}
}

// mxfp8KV is SGLang's MXFP8 pool: codes (slots, H, D) per tensor, and per
// tensor a scale buffer whose page holds, per head, 32 rows of P/32
// tokens' D/32 scales: token t's at row t%32, column t/32 (the
// BlockScaledBasicChunk atom FA4 reads).
func mxfp8KV(d Dims) *Layout {
	sf, p := d.HeadDim/32, d.PageSize
	scales := func(region string) *Place {
		return &Place{Region: region, Maps: []Map{
			{Of: []Coord{CoordSlot}, Shape: []int{32, p / 32}, Stride: []int{p / 32 * sf, sf}},
			{Of: []Coord{CoordHead}, Shape: []int{d.Heads}, Stride: []int{p * sf}},
			{Of: []Coord{CoordUnit}, Shape: []int{sf}, Stride: []int{1}},
		}}
	}
	recipe := func() *Recipe { return &Recipe{Scale: ScaleUE8M0, Eps: new(1e-30)} }
	return &Layout{Tensors: kv, ReservedSlots: 1,
		Regions: []Region{{Name: "k"}, {Name: "v"}, {Name: "k_scale"}, {Name: "v_scale"}},
		Fields: []Field{
			{Name: "k", Kind: KindE4M3, Tensor: "k", To: d.HeadDim, Group: 32, Recipe: recipe(), Place: torchPlace("k", 0, 1, nhd(d, d.HeadDim)...)},
			{Name: "v", Kind: KindE4M3, Tensor: "v", To: d.HeadDim, Group: 32, Recipe: recipe(), Place: torchPlace("v", 0, 1, nhd(d, d.HeadDim)...)},
			{Name: "k_scale", Kind: KindScaleUE8M0, Of: "k", Place: scales("k_scale")},
			{Name: "v_scale", Kind: KindScaleUE8M0, Of: "v", Place: scales("v_scale")},
		}}
}
