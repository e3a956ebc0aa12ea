package layout

import (
	"encoding/binary"
	"math"
	"math/rand/v2"
	"testing"
)

// This file holds independent controls for the built-in engine layouts:
// each writes a pool the way its engine's source does, with nested loops
// over the engine's tensor shape and flat indices computed from torch's
// contiguous strides or from the kernel's own index formula, and
// quantizes in float64 by searching the code tables. It shares nothing
// with the algebra or the reference encoders but the code tables.

// stridesOf is torch's contiguous strides for a shape, in elements.
func stridesOf(shape ...int) []int {
	st := make([]int, len(shape))
	s := 1
	for i := len(shape) - 1; i >= 0; i-- {
		st[i] = s
		s *= shape[i]
	}
	return st
}

// flat is the element index of idx in a contiguous tensor of shape.
func flat(shape []int, idx ...int) int {
	st := stridesOf(shape...)
	at := 0
	for i, x := range idx {
		if x < 0 || x >= shape[i] {
			panic("index out of the engine's tensor")
		}
		at += x * st[i]
	}
	return at
}

// nearestCode is the code nearest x among a format's positive codes
// 0..last (values ascending), ties to the even code, saturating at last;
// the sign bit of a negative x is added.
func nearestCode(val func(byte) float64, last byte, sign byte, x float64) byte {
	var s byte
	if math.Signbit(x) {
		s, x = sign, -x
	}
	if x >= val(last) {
		return s | last
	}
	best := byte(0)
	for c := byte(1); c <= last; c++ {
		d, bd := math.Abs(val(c)-x), math.Abs(val(best)-x)
		if d < bd || d == bd && c%2 == 0 {
			best = c
		}
		if val(c) > x {
			break
		}
	}
	return s | best
}

func e4m3Val(c byte) float64 { return float64(e4m3Table[c]) }
func e5m2Val(c byte) float64 { return float64(e5m2Table[c]) }
func e2m1Val(c byte) float64 { return float64(e2m1Table[c]) }

// fp8BySearch is a saturating fp8 code of the float32 quotient y; NaN is
// the format's NaN.
func fp8BySearch(kind FieldKind, y float32) byte {
	if y != y {
		return 0x7f
	}
	if kind == KindE5M2 {
		return nearestCode(e5m2Val, 0x7b, 0x80, float64(y))
	}
	return nearestCode(e4m3Val, 0x7e, 0x80, float64(y))
}

// engineRows draws a row per slot: normal rows of several magnitudes,
// zero rows, tiny ones, outliers, now and then a NaN or an infinity.
func engineRows(n, elems int, seed uint64) [][]uint16 {
	rng := rand.New(rand.NewPCG(seed, 3))
	rows := make([][]uint16, n)
	for i := range rows {
		rows[i] = make([]uint16, elems)
		scale := math.Ldexp(1, rng.IntN(20)-10)
		for j := range rows[i] {
			switch i % 7 {
			case 0: // zero row
			case 1:
				rows[i][j] = Float32ToBF16(float32((rng.Float64()*2 - 1) * 1e-6))
			default:
				rows[i][j] = Float32ToBF16(float32(rng.NormFloat64() * scale))
			}
		}
		if i%7 == 3 {
			rows[i][rng.IntN(elems)] = Float32ToBF16(3e4)
		}
		if i%11 == 5 {
			rows[i][rng.IntN(elems)] = 0x7fc0 // NaN
			rows[i][rng.IntN(elems)] = 0xff80 // -Inf
		}
	}
	return rows
}

// layoutPool writes rows through the layout: each slot's records at its
// footprint, over a background of 0xa5 bytes.
func layoutPool(l *Layout, slots []int64, rows [][]uint16, in Inputs, poolBytes int) []byte {
	pool := make([]byte, poolBytes)
	for i := range pool {
		pool[i] = 0xa5
	}
	for i, s := range slots {
		recs := l.EncodeWith(rows[i], in)
		for p, sp := range l.Footprint(s) {
			copy(pool[sp.Off:sp.End()], recs[p])
		}
	}
	return pool
}

// slotPieces reads slot's records out of a pool.
func slotPieces(l *Layout, pool []byte, slot int64) [][]byte {
	spans := l.Footprint(slot)
	recs := make([][]byte, len(spans))
	for p, sp := range spans {
		recs[p] = pool[sp.Off:sp.End()]
	}
	return recs
}

// engine is one engine's control: it writes rows at slots of a pool of
// pages pages, in its own style.
type engine func(d Dims, pages int, slots []int64, rows [][]uint16, in Inputs, pool []byte)

// engines are the controls, by the built-in layout they check.
var engines = map[string]engine{
	"vllm-flash":                flashControl(KindBF16),
	"vllm-flash-fp8":            flashControl(KindE4M3),
	"vllm-flash-e5m2":           flashControl(KindE5M2),
	"sglang-mha":                flashControl(KindBF16),
	"flashinfer-nhd":            flashinferControl(false),
	"flashinfer-hnd":            flashinferControl(true),
	"vllm-paged":                pagedControl(KindBF16),
	"vllm-paged-fp8":            pagedControl(KindE4M3),
	"vllm-mla-fp8":              mlaControl,
	"nvfp4-kv":                  nvfp4Control(false),
	"nvfp4-kv-hnd":              nvfp4Control(true),
	"mxfp8-kv":                  mxfp8Control,
	"sglang-indexer-preshuffle": preshuffleControl,
}

// put writes element x of a K or V row as kind at element index i of a
// tensor starting at base.
func put(pool []byte, base, i int, kind FieldKind, x uint16, scale float32) {
	switch kind {
	case KindBF16:
		binary.LittleEndian.PutUint16(pool[base+2*i:], x)
	default:
		pool[base+i] = fp8BySearch(kind, BF16ToFloat32(x)/scale)
	}
}

func kvScale(in Inputs, kv int) float32 {
	if s := in.Scales[[]string{"k", "v"}[kv]]; len(s) > 0 {
		return s[0]
	}
	return 1
}

// flashControl is vLLM's (2, num_blocks, P, H, D) cache (SGLang's two
// (slots, H, D) buffers are the same bytes): reshape_and_cache_flash's
// loops, key_cache = kv_cache[0], value_cache = kv_cache[1].
func flashControl(kind FieldKind) engine {
	return func(d Dims, pages int, slots []int64, rows [][]uint16, in Inputs, pool []byte) {
		shape := []int{2, pages, d.PageSize, d.Heads, d.HeadDim}
		for i, slot := range slots {
			for kv := range 2 {
				for h := range d.Heads {
					for e := range d.HeadDim {
						x := rows[i][(kv*d.Heads+h)*d.HeadDim+e]
						put(pool, 0, flat(shape, kv, int(slot)/d.PageSize, int(slot)%d.PageSize, h, e), kind, x, kvScale(in, kv))
					}
				}
			}
		}
	}
}

// flashinferControl is (num_pages, 2, P, H, D) or (num_pages, 2, H, P, D).
func flashinferControl(hnd bool) engine {
	return func(d Dims, pages int, slots []int64, rows [][]uint16, in Inputs, pool []byte) {
		for i, slot := range slots {
			page, t := int(slot)/d.PageSize, int(slot)%d.PageSize
			for kv := range 2 {
				for h := range d.Heads {
					for e := range d.HeadDim {
						x := rows[i][(kv*d.Heads+h)*d.HeadDim+e]
						at := flat([]int{pages, 2, d.PageSize, d.Heads, d.HeadDim}, page, kv, t, h, e)
						if hnd {
							at = flat([]int{pages, 2, d.Heads, d.PageSize, d.HeadDim}, page, kv, h, t, e)
						}
						put(pool, 0, at, KindBF16, x, 1)
					}
				}
			}
		}
	}
}

// pagedControl is reshape_and_cache's index arithmetic, as written in
// csrc/cache_kernels.cu: key_cache then value_cache, x = 16 bytes.
func pagedControl(kind FieldKind) engine {
	return func(d Dims, pages int, slots []int64, rows [][]uint16, in Inputs, pool []byte) {
		eb := 2
		if kind != KindBF16 {
			eb = 1
		}
		x := 16 / eb
		numHeads, headSize, blockSize := d.Heads, d.HeadDim, d.PageSize
		valueBase := pages * numHeads * headSize * blockSize * eb
		for i, slot := range slots {
			blockIdx, blockOffset := int(slot)/blockSize, int(slot)%blockSize
			for j := range numHeads * headSize {
				headIdx, headOffset := j/headSize, j%headSize
				xIdx, xOffset := headOffset/x, headOffset%x
				tgtKeyIdx := blockIdx*numHeads*(headSize/x)*blockSize*x + headIdx*(headSize/x)*blockSize*x + xIdx*blockSize*x + blockOffset*x + xOffset
				tgtValueIdx := blockIdx*numHeads*headSize*blockSize + headIdx*headSize*blockSize + headOffset*blockSize + blockOffset
				put(pool, 0, tgtKeyIdx, kind, rows[i][j], kvScale(in, 0))
				put(pool, valueBase, tgtValueIdx, kind, rows[i][numHeads*headSize+j], kvScale(in, 1))
			}
		}
	}
}

// mlaControl is concat_and_cache_mla's (num_blocks, P, 576) fp8 cache.
func mlaControl(d Dims, pages int, slots []int64, rows [][]uint16, in Inputs, pool []byte) {
	s := float32(1)
	if v := in.Scales[""]; len(v) > 0 {
		s = v[0]
	}
	for i, slot := range slots {
		for e := range 576 {
			pool[flat([]int{pages, d.PageSize, 576}, int(slot)/d.PageSize, int(slot)%d.PageSize, e)] = fp8BySearch(KindE4M3, BF16ToFloat32(rows[i][e])/s)
		}
	}
}

// preshuffleControl is SGLang's indexer page with PRESHUFFLE_TILE 16, as
// _scatter_dsa_cache_by_loc_kernel indexes it, quantized per token with
// max(amax, 1e-4)/448 in float64 rounded once to float32.
func preshuffleControl(d Dims, pages int, slots []int64, rows [][]uint16, in Inputs, pool []byte) {
	const tile = 16
	perPage := d.PageSize * (d.HeadDim + 4)
	for i, slot := range slots {
		page, tip := int(slot)/d.PageSize, int(slot)%d.PageSize
		amax := 0.0
		for _, e := range rows[i] {
			if a := math.Abs(float64(BF16ToFloat32(e))); a > amax { // NaN compares false
				amax = a
			}
		}
		scale := float32(math.Max(amax, float64(float32(1e-4))) / 448)
		for k := range d.HeadDim {
			off := page*perPage + tip/tile*(tile*d.HeadDim) + k/tile*(tile*tile) + tip%tile*tile + k%tile
			pool[off] = fp8BySearch(KindE4M3, BF16ToFloat32(rows[i][k])/scale)
		}
		binary.LittleEndian.PutUint32(pool[page*perPage+d.PageSize*d.HeadDim+tip*4:], math.Float32bits(scale))
	}
}

// nvfp4Control is vLLM's reshape_and_cache_nvfp4: [K data | K scale | V
// data | V scale] per page, data at head·head_stride + token·token_stride,
// scales at swizzle_scale_offset, quantized in float64: the block scale
// the e4m3 nearest global·amax/6, each code the e2m1 nearest
// x·global/block, ties to even, packed (v2 << 4) | v1.
func nvfp4Control(isHND bool) engine {
	return func(d Dims, pages int, slots []int64, rows [][]uint16, in Inputs, pool []byte) {
		numHeads, headSize, blockSize := d.Heads, d.HeadDim, d.PageSize
		dataDim, scaleDim := headSize/2, headSize/16
		dataPerKV := numHeads * blockSize * dataDim
		side := dataPerKV + numHeads*blockSize*scaleDim
		pageBytes := 2 * side
		dataHeadStride, dataTokStride := dataDim, numHeads*dataDim
		scaleHeadStride, scaleTokStride := scaleDim, numHeads*scaleDim
		if isHND {
			dataHeadStride, dataTokStride = blockSize*dataDim, dataDim
			scaleHeadStride, scaleTokStride = blockSize*scaleDim, scaleDim
		}
		swizzle := func(t, s int) int {
			sGroup := scaleDim / 4
			return ((t/4)*4+s/sGroup)*scaleDim + (s%sGroup)*4 + t%4
		}
		for i, slot := range slots {
			block, t := int(slot)/blockSize, int(slot)%blockSize
			for kv := range 2 {
				gs := float64(float32(1) / kvScale(in, kv))
				dataBase := block*pageBytes + kv*side
				scaleBase := dataBase + dataPerKV
				for h := range numHeads {
					for g := range headSize / 16 {
						x := rows[i][(kv*numHeads+h)*headSize+g*16 : (kv*numHeads+h)*headSize+(g+1)*16]
						amax := 0.0
						for _, e := range x {
							if a := math.Abs(float64(BF16ToFloat32(e))); a > amax {
								amax = a
							}
						}
						sf := nearestCode(e4m3Val, 0x7e, 0x80, gs*amax/6)
						sd := e4m3Val(sf)
						sw := swizzle(t, g)
						pool[scaleBase+h*scaleHeadStride+sw/scaleDim*scaleTokStride+sw%scaleDim] = sf
						for k := 0; k < 16; k += 2 {
							var v [2]byte
							for j := range 2 {
								xv := float64(BF16ToFloat32(x[k+j]))
								switch {
								case xv != xv:
									v[j] = 0
								case sd == 0:
									v[j] = nearestCode(e2m1Val, 7, 8, math.Copysign(0, xv))
								default:
									v[j] = nearestCode(e2m1Val, 7, 8, xv*gs/sd)
								}
							}
							pool[dataBase+h*dataHeadStride+t*dataTokStride+(g*16+k)/2] = v[1]<<4 | v[0]&0xf
						}
					}
				}
			}
		}
	}
}

// mxfp8Control is SGLang's MXFP8 pool as _mxfp8_quant_store_qkv_kernel
// writes it: codes at (loc·NKV + h)·D, scales of a page block (NKV, 32,
// PAGE/32, SF) at ((loc/PAGE)·NKV + h)·(PAGE·SF) + (po%32)·(PAGE/32·SF) +
// (po/32)·SF, the exponent ceil(log2(max(amax, 1e-30)/448)) in float64.
func mxfp8Control(d Dims, pages int, slots []int64, rows [][]uint16, in Inputs, pool []byte) {
	nkv, dd, page := d.Heads, d.HeadDim, d.PageSize
	sf := dd / 32
	cacheBytes := pages * page * nkv * dd
	scaleBytes := pages * nkv * page * sf
	for i, loc := range slots {
		for kv := range 2 {
			cache := kv * cacheBytes
			sfb := 2*cacheBytes + kv*scaleBytes
			for h := range nkv {
				for blk := range sf {
					x := rows[i][(kv*nkv+h)*dd+blk*32 : (kv*nkv+h)*dd+(blk+1)*32]
					amax := 1e-30
					for _, e := range x {
						if a := math.Abs(float64(BF16ToFloat32(e))); a > amax {
							amax = a
						}
					}
					e := 127
					if !math.IsInf(amax, 1) {
						e = int(math.Ceil(math.Log2(amax / 448)))
					}
					// log2 in float64 of amax/448 is exact enough: amax is
					// a bf16 and 448 = 7·2^6, so amax/448 is never a power
					// of two unless amax is 7·2^k, whose log2 is exact.
					e = min(max(e, -127), 127)
					po := int(loc) % page
					pool[sfb+(int(loc)/page*nkv+h)*(page*sf)+po%32*(page/32*sf)+po/32*sf+blk] = byte(e + 127)
					for k, xv := range x {
						q := float64(BF16ToFloat32(xv)) / math.Ldexp(1, e)
						pool[cache+(int(loc)*nkv+h)*dd+blk*32+k] = nearestCode(e4m3Val, 0x7e, 0x80, math.Max(-448, math.Min(448, q)))
						if q != q {
							pool[cache+(int(loc)*nkv+h)*dd+blk*32+k] = 0x7f
						}
					}
				}
			}
		}
	}
}

// TestEnginesAgainstControls writes every built-in engine layout's pool
// through the algebra and through the engine's control, for head counts
// 1 to 16, head dims 64 to 576 and page sizes 1 to 256 where the layout
// takes them, and compares the bytes. bf16 and static-scale fp8 pools
// must be equal; where a control quantizes in float64 (NVFP4, MXFP8, the
// indexer's scale) a byte may differ only where the judgement accepts the
// control's slot, and rarely.
func TestEnginesAgainstControls(t *testing.T) {
	eachModel(t, func(t *testing.T, name string, d Dims, l *Layout) {
		control, ok := engines[name]
		if !ok {
			t.Fatalf("no control for %s", name)
		}
		pages := 3
		if l.PageBytes()*pages > 1<<23 {
			pages = 1
		}
		nslots := min(pages*d.PageSize, 24)
		rng := rand.New(rand.NewPCG(uint64(d.Heads), uint64(d.HeadDim)))
		slots := make([]int64, nslots)
		for i, s := range rng.Perm(pages * d.PageSize)[:nslots] {
			slots[i] = int64(s)
		}
		rows := engineRows(nslots, l.RowElems(), uint64(d.PageSize))
		in := Inputs{}
		if len(l.ScaleInputs()) > 0 {
			in.Scales = map[string][]float32{}
			for tn := range l.ScaleInputs() {
				in.Scales[tn] = []float32{float32(0.37 + rng.Float64())}
			}
		}
		bound, err := l.ForPool(pages * d.PageSize)
		if err != nil {
			t.Fatal(err)
		}
		got := layoutPool(bound, slots, rows, in, l.PoolBytes(pages*d.PageSize))
		want := make([]byte, len(got))
		for i := range want {
			want[i] = 0xa5
		}
		control(d, pages, slots, rows, in, want)
		differ := 0
		for i, s := range slots {
			recs := slotPieces(bound, want, s)
			same := true
			for _, sp := range bound.Footprint(s) {
				for o := sp.Off; o < sp.End(); o++ {
					if got[o] != want[o] {
						same = false
						differ++
					}
				}
			}
			if !same {
				if !quantizedInFloat64(name) {
					t.Fatalf("slot %d: the algebra's bytes differ from the engine's", s)
				}
				if fs := bound.JudgeWith(rows[i], in, recs, ByRecipe); len(fs) > 0 {
					t.Fatalf("slot %d: the control's bytes differ and fail the judgement: %s", s, Summary(fs))
				}
			}
		}
		for o := range got {
			if got[o] != want[o] {
				if _, ok := bound.Locate(o, pages*d.PageSize); !ok {
					t.Fatalf("byte %d, owned by no slot, differs: %#02x, control %#02x", o, got[o], want[o])
				}
			}
		}
		if differ > 0 {
			t.Logf("%d of %d bytes differ from the float64 control; the judgement accepts them", differ, len(slots)*l.BytesPerToken())
		}
		if differ*1000 > len(slots)*l.BytesPerToken() {
			t.Errorf("%d of %d bytes differ from the float64 control", differ, len(slots)*l.BytesPerToken())
		}
	})
}

func quantizedInFloat64(name string) bool {
	switch name {
	case "nvfp4-kv", "nvfp4-kv-hnd", "mxfp8-kv", "sglang-indexer-preshuffle":
		return true
	}
	return false
}
