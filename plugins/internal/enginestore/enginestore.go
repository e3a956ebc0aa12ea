// Package enginestore writes one token into the serving engines' KV caches
// as their own store kernels index them: vLLM's reshape_and_cache_flash and
// reshape_and_cache, FlashInfer's append_paged_kv_cache (NHD and HND),
// SGLang's MHA, MXFP8 and preshuffled indexer pools, vLLM's MLA and NVFP4
// caches. Each layout is an index formula over the engine's tensor shape,
// written from the engine's source and never from the harness's layout
// algebra, so the harness's oracle and this kernel do not share a mistake.
//
// Bugs put back, one at a time, the mistakes real stores made; a plugin's
// variants set them.
package enginestore

import (
	"encoding/binary"
	"fmt"
	"math"

	"github.com/kvharness/kvharness/harness/layout"
	"github.com/kvharness/kvharness/plugins/internal/fp8"
)

// Dims are a cache's sizes: KV heads, head dim, tokens per page, and the
// pool's pages (a later tensor's pages start after all of an earlier
// one's).
type Dims struct {
	Heads, HeadDim, PageSize, Pages int
}

// Bugs are the mistakes a store may make; the zero value stores correctly.
type Bugs struct {
	SwapNHD      bool // FlashInfer: the other of NHD and HND (the same bytes for one head)
	OtherX       bool // vLLM paged K: the x of the other dtype (16 for bf16, 8 for fp8)
	SwapKV       bool // K written where V goes and V where K goes
	ScaleMul     bool // static fp8 scale: x * scale instead of x / scale
	E5M2         bool // e5m2 codes where e4m3 is declared
	NibbleSwap   bool // NVFP4: the even element in the high nibble
	Unswizzled   bool // NVFP4: a block scale at its row-major index, not the 4-token swizzle
	ReservedNaNs bool // MXFP8: this row is the reserved slot's garbage: NaN codes, 0xFF scales
}

// Names are the layouts Store writes.
var Names = []string{
	"flashinfer-hnd", "flashinfer-nhd", "mxfp8-kv", "nvfp4-kv", "nvfp4-kv-hnd", "sglang-indexer-preshuffle",
	"sglang-mha", "vllm-flash", "vllm-flash-e5m2", "vllm-flash-fp8", "vllm-mla-fp8", "vllm-paged", "vllm-paged-fp8",
}

// Takes reports whether the engine's store takes a cache of heads KV
// heads, head dim d and page size p: the divisibility its index formulas
// need (vLLM paged's x of 16 bytes, NVFP4's 16-element blocks in 4-token
// by 4-block swizzle tiles, MXFP8's 32-element blocks interleaved over
// 32 tokens, the indexer's 16×16 tiles), one head for the layouts of one
// latent or indexer row (MLA's is 576 elements, whatever head dim is
// asked). A K/V cache's head dim is at most 256: the largest the
// attention kernels that read these caches take (FlashAttention's and
// FlashInfer's).
func Takes(name string, heads, d, p int) bool {
	if _, ok := BytesPerToken(name, heads, d); !ok || heads < 1 || d < 1 || p < 1 {
		return false
	}
	if name != "vllm-mla-fp8" && name != "sglang-indexer-preshuffle" && d > maxKVHeadDim {
		return false
	}
	switch name {
	case "vllm-paged":
		return d%8 == 0
	case "vllm-paged-fp8":
		return d%16 == 0
	case "nvfp4-kv", "nvfp4-kv-hnd":
		return d%64 == 0 && p%4 == 0
	case "mxfp8-kv":
		return d%32 == 0 && p%32 == 0
	case "sglang-indexer-preshuffle":
		return heads == 1 && d%16 == 0 && p%16 == 0
	case "vllm-mla-fp8":
		return heads == 1 // its 576 elements whatever the head dim asked, as a layout of a fixed dim is declared
	}
	return true
}

// maxKVHeadDim is the largest head dim of a K/V cache Takes.
const maxKVHeadDim = 256

// BytesPerToken is a layout's bytes per token, from the engine's tensor
// shapes; false for a layout Store does not write.
func BytesPerToken(name string, heads, d int) (int, bool) {
	kv := 2 * heads * d // K and V elements
	switch name {
	case "vllm-flash", "sglang-mha", "flashinfer-nhd", "flashinfer-hnd", "vllm-paged":
		return 2 * kv, true
	case "vllm-flash-fp8", "vllm-flash-e5m2", "vllm-paged-fp8":
		return kv, true
	case "vllm-mla-fp8":
		return 576, true
	case "sglang-indexer-preshuffle":
		return d + 4, true
	case "nvfp4-kv", "nvfp4-kv-hnd":
		return kv/2 + kv/16, true
	case "mxfp8-kv":
		return kv + kv/32, true
	}
	return 0, false
}

// Store writes row (K then V, each heads × head dim, head-major; MLA's
// 576 latent and rope elements; the indexer's D) of slot into the pool
// at arena[base:]. scales are the static scales by tensor name.
func Store(name string, d Dims, arena []byte, base int, slot int64, row []uint16, scales map[string][]float32, b Bugs) error {
	w := writer{arena: arena, base: base, d: d, slot: int(slot), row: row, scales: [3][]float32{scales["k"], scales["v"], scales[""]}, b: b}
	switch name {
	case "vllm-flash", "sglang-mha":
		w.flash(2, putBF16)
	case "vllm-flash-fp8":
		w.flash(1, w.static(e4m3))
	case "vllm-flash-e5m2":
		w.flash(1, w.static(layout.EncodeE5M2))
	case "flashinfer-nhd":
		w.flashinfer(b.SwapNHD)
	case "flashinfer-hnd":
		w.flashinfer(!b.SwapNHD)
	case "vllm-paged":
		w.paged(2, putBF16)
	case "vllm-paged-fp8":
		w.paged(1, w.static(e4m3))
	case "vllm-mla-fp8":
		w.mla()
	case "sglang-indexer-preshuffle":
		w.preshuffle()
	case "nvfp4-kv":
		w.nvfp4(false)
	case "nvfp4-kv-hnd":
		w.nvfp4(true)
	case "mxfp8-kv":
		w.mxfp8()
	default:
		return fmt.Errorf("enginestore has no layout %s", name)
	}
	return nil
}

type writer struct {
	arena  []byte
	base   int
	d      Dims
	slot   int
	row    []uint16
	scales [3][]float32 // by tensor: k, v, then the one of a cache of one tensor (named ""), looked up once a row, not once an element
	b      Bugs
}

// put stores element x of tensor kv at byte offset at of the pool.
type put func(w *writer, at, kv, h int, x uint16)

func putBF16(w *writer, at, _, _ int, x uint16) {
	binary.LittleEndian.PutUint16(w.arena[w.base+at:], x)
}

// e4m3 is the e4m3 code of x (or e5m2, for the E5M2 bug).
func e4m3(x float32) byte { return fp8.FromFloat32(x) }

// static is a put of fp8 codes of x over the tensor's static scale.
func (w *writer) static(code func(float32) byte) put {
	if w.b.E5M2 {
		code = layout.EncodeE5M2
	}
	return func(w *writer, at, kv, h int, x uint16) {
		s := w.scale(kv, h)
		y := fp8.BF16(x) / s
		if w.b.ScaleMul {
			y = fp8.BF16(x) * s
		}
		w.arena[w.base+at] = code(y)
	}
}

// scale is tensor kv's static scale for head h: vLLM's k_scale, v_scale.
func (w *writer) scale(kv, h int) float32 {
	s := w.scales[2]
	if kv >= 0 {
		s = w.scales[kv]
	}
	switch {
	case len(s) == 0:
		return 1
	case len(s) > h:
		return s[h]
	}
	return s[0]
}

// x is element e of head h of tensor kv in the row, K and V swapped under
// the bug.
func (w *writer) x(kv, h, e int) uint16 {
	if w.b.SwapKV {
		kv = 1 - kv
	}
	return w.row[(kv*w.d.Heads+h)*w.d.HeadDim+e]
}

// flash is vLLM's (2, num_blocks, P, H, D) cache: key_cache =
// kv_cache[0], value_cache = kv_cache[1]; reshape_and_cache_flash writes
// element (h, e) of slot at block_idx·block_stride + block_offset·H·D +
// h·D + e. SGLang's (slots, H, D) k_buffer and v_buffer are the same.
func (w *writer) flash(eb int, p put) {
	H, D, P := w.d.Heads, w.d.HeadDim, w.d.PageSize
	block, off := w.slot/P, w.slot%P
	for kv := range 2 {
		cache := kv * w.d.Pages * P * H * D * eb
		for h := range H {
			for e := range D {
				idx := block*P*H*D + off*H*D + h*D + e
				p(w, cache+idx*eb, kv, h, w.x(kv, h, e))
			}
		}
	}
}

// flashinfer is (num_pages, 2, P, H, D) NHD or (num_pages, 2, H, P, D)
// HND: paged_kv_t::get_elem_offset.
func (w *writer) flashinfer(hnd bool) {
	H, D, P := w.d.Heads, w.d.HeadDim, w.d.PageSize
	page, entry := w.slot/P, w.slot%P
	stridePage := 2 * P * H * D
	strideN, strideH := H*D, D // NHD
	if hnd {
		strideN, strideH = D, P*D
	}
	for kv := range 2 {
		for h := range H {
			for e := range D {
				idx := page*stridePage + kv*P*H*D + h*strideH + entry*strideN + e
				putBF16(w, 2*idx, kv, h, w.x(kv, h, e))
			}
		}
	}
}

// paged is reshape_and_cache's key_cache (num_blocks, H, D/x, P, x) and
// value_cache (num_blocks, H, D, P), x = 16 bytes of elements.
func (w *writer) paged(eb int, p put) {
	H, D, P := w.d.Heads, w.d.HeadDim, w.d.PageSize
	x := 16 / eb
	if w.b.OtherX {
		x = map[int]int{2: 16, 1: 8}[eb]
	}
	valueBase := w.d.Pages * H * D * P * eb
	block, off := w.slot/P, w.slot%P
	for j := range H * D {
		h, e := j/D, j%D
		xi, xo := e/x, e%x
		key := block*H*(D/x)*P*x + h*(D/x)*P*x + xi*P*x + off*x + xo
		value := block*H*D*P + h*D*P + e*P + off
		p(w, key*eb, 0, h, w.x(0, h, e))
		p(w, valueBase+value*eb, 1, h, w.x(1, h, e))
	}
}

// mla is concat_and_cache_mla's (num_blocks, P, 576) fp8 cache: the 512
// latent and 64 rope elements over the one scale passed in.
func (w *writer) mla() {
	p := w.static(e4m3)
	for e := range 576 {
		p(w, w.slot*576+e, -1, 0, w.row[e])
	}
}

// preshuffle is SGLang's indexer page with PRESHUFFLE_TILE 16: a page of
// P tokens' D codes in 16×16 tiles, then P float32 scales,
// max(amax, 1e-4)/448 per token.
func (w *writer) preshuffle() {
	const tile = 16
	D, P := w.d.HeadDim, w.d.PageSize
	page, tip := w.slot/P, w.slot%P
	pageBytes := P * (D + 4)
	s := fp8.Scale(w.row[:D], true)
	for k := range D {
		at := page*pageBytes + tip/tile*(tile*D) + k/tile*(tile*tile) + tip%tile*tile + k%tile
		w.arena[w.base+at] = e4m3(fp8.BF16(w.row[k]) / s)
	}
	binary.LittleEndian.PutUint32(w.arena[w.base+page*pageBytes+P*D+tip*4:], math.Float32bits(s))
}

// nvfp4 is reshape_and_cache_nvfp4: per page [K data | K scales | V data
// | V scales], an e4m3 block scale per 16 at swizzle_scale_offset, e2m1
// codes of x·global/block packed two to a byte, global = 1/k_scale.
func (w *writer) nvfp4(hnd bool) {
	H, D, P := w.d.Heads, w.d.HeadDim, w.d.PageSize
	dataDim, scaleDim := D/2, D/16
	dataPerKV := H * P * dataDim
	side := dataPerKV + H*P*scaleDim
	dataHead, dataTok := dataDim, H*dataDim
	scaleHead, scaleTok := scaleDim, H*scaleDim
	if hnd {
		dataHead, dataTok = P*dataDim, dataDim
		scaleHead, scaleTok = P*scaleDim, scaleDim
	}
	block, t := w.slot/P, w.slot%P
	for kv := range 2 {
		gs := 1 / w.scale(kv, 0)
		data := block*2*side + kv*side
		scales := data + dataPerKV
		for h := range H {
			for g := range D / 16 {
				var amax float32
				for k := range 16 {
					amax = fmaxf(amax, abs(fp8.BF16(w.x(kv, h, g*16+k))))
				}
				sf := fp8.FromFloat32(gs * amax / 6)
				sd := layout.DecodeE4M3(sf)
				sw := swizzle(t, g, scaleDim)
				if w.b.Unswizzled {
					sw = t*scaleDim + g
				}
				w.arena[w.base+scales+h*scaleHead+sw/scaleDim*scaleTok+sw%scaleDim] = sf
				for k := 0; k < 16; k += 2 {
					var v [2]byte
					for j := range 2 {
						xv := fp8.BF16(w.x(kv, h, g*16+k+j))
						if sd != 0 {
							xv = xv * gs / sd
						} else {
							xv = float32(math.Copysign(0, float64(xv)))
						}
						v[j] = layout.EncodeE2M1(xv) & 0xf
					}
					lo, hi := v[0], v[1]
					if w.b.NibbleSwap {
						lo, hi = hi, lo
					}
					w.arena[w.base+data+h*dataHead+t*dataTok+(g*16+k)/2] = hi<<4 | lo
				}
			}
		}
	}
}

// swizzle is vLLM's swizzle_scale_offset within a page's scale rows: a
// block of 4 tokens holds each scale column group of 4 interleaved.
func swizzle(t, s, scaleDim int) int {
	group := scaleDim / 4
	return ((t/4)*4+s/group)*scaleDim + (s%group)*4 + t%4
}

// mxfp8 is _mxfp8_quant_store_qkv_kernel: codes at (loc·H + h)·D, a
// ue8m0 scale per 32 in the (pages, H, 32, P/32, D/32) buffer, the
// exponent ceil(log2(amax / 448)).
func (w *writer) mxfp8() {
	H, D, P := w.d.Heads, w.d.HeadDim, w.d.PageSize
	sf := D / 32
	cacheBytes := w.d.Pages * P * H * D
	scaleBytes := w.d.Pages * H * P * sf
	for kv := range 2 {
		cache := kv * cacheBytes
		sfb := 2*cacheBytes + kv*scaleBytes
		for h := range H {
			for blk := range sf {
				var amax float32 = 1e-30
				for k := range 32 {
					amax = fmaxf(amax, abs(fp8.BF16(w.x(kv, h, blk*32+k))))
				}
				e := int(math.Ceil(math.Log2(float64(amax) / 448)))
				e = min(max(e, -127), 127)
				po := w.slot % P
				code := byte(e + 127)
				if w.b.ReservedNaNs {
					code = 0xff
				}
				w.arena[w.base+sfb+(w.slot/P*H+h)*(P*sf)+po%32*(P/32*sf)+po/32*sf+blk] = code
				for k := range 32 {
					q := fp8.BF16(w.x(kv, h, blk*32+k)) / float32(math.Ldexp(1, e))
					c := e4m3(min(max(q, -448), 448))
					if w.b.ReservedNaNs {
						c = 0x7f
					}
					w.arena[w.base+cache+(w.slot*H+h)*D+blk*32+k] = c
				}
			}
		}
	}
}

func abs(x float32) float32 { return float32(math.Abs(float64(x))) }

// fmaxf is CUDA's fmaxf, which the engines' block maxima use: a NaN
// element leaves the maximum to the others (Go's max would return NaN).
func fmaxf(a, b float32) float32 {
	if b != b || a > b {
		return a
	}
	return b
}
