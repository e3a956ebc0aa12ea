// enginestore: the engines' K/V cache stores on the GPU, one block per row,
// by the same index formulas as enginestore.go. Compiled per layout and
// geometry: ES_LAYOUT picks the formula, ES_H/ES_D/ES_P/ES_PAGES are the
// heads, head dim, page size and the pool's pages, ES_RULE the padding rule
// (fusedstore's FUSED_RULE numbers), ES_BUG_* the mistakes of a mutant.
//
//   ES_LAYOUT 1 vllm-flash / sglang-mha (bf16)   2 vllm-flash-fp8   3 vllm-flash-e5m2
//             4 flashinfer-nhd   5 flashinfer-hnd   6 vllm-paged   7 vllm-paged-fp8
//             8 vllm-mla-fp8   9 sglang-indexer-preshuffle   10 nvfp4-kv   11 nvfp4-kv-hnd
//             12 mxfp8-kv
#include <cuda_fp8.h>

typedef long long es_i64;

#ifndef ES_RULE
#define ES_RULE 0
#endif
#ifndef ES_BUG_SWAP_NHD
#define ES_BUG_SWAP_NHD 0
#endif
#ifndef ES_BUG_OTHER_X
#define ES_BUG_OTHER_X 0
#endif
#ifndef ES_BUG_SWAP_KV
#define ES_BUG_SWAP_KV 0
#endif
#ifndef ES_BUG_SCALE_MUL
#define ES_BUG_SCALE_MUL 0
#endif
#ifndef ES_BUG_E5M2
#define ES_BUG_E5M2 0
#endif
#ifndef ES_BUG_NIBBLE_SWAP
#define ES_BUG_NIBBLE_SWAP 0
#endif
#ifndef ES_BUG_UNSWIZZLED
#define ES_BUG_UNSWIZZLED 0
#endif
#ifndef ES_BUG_RESERVED_NANS
#define ES_BUG_RESERVED_NANS 0
#endif

// es_rule is fusedstore's padding decision (FusedRule in fusedstore.cu).
__device__ __forceinline__ bool es_rule(int i, int n, es_i64 loc, es_i64 slots, es_i64* slot, bool* nans) {
  *slot = loc;
  *nans = false;
#if ES_RULE == 1
  return loc >= 0;
#elif ES_RULE == 2
  return i < n || loc == 0;
#elif ES_RULE == 3
  if (loc < 0) {
    *slot = loc + slots;
    return true;
  }
  return i < n;
#elif ES_RULE == 4
  return i < n - 1;
#elif ES_RULE == 7
  if (i == n - 1) *slot = loc + ((es_i64)1 << 32);
  return i < n;
#elif ES_RULE == 8
  *slot = (es_i64)(unsigned short)loc;
  return i < n;
#else
#if ES_BUG_RESERVED_NANS
  if (i >= n && loc == 0) {
    *nans = true;
    return true;
  }
#endif
  return i < n;
#endif
}

__device__ __forceinline__ float es_bf16(unsigned short b) { return __uint_as_float((unsigned)b << 16); }

__device__ __forceinline__ unsigned char es_e4m3(float x) {
  if (x != x) return 0x7f;
  return (unsigned char)__nv_cvt_float_to_fp8(x, __NV_SATFINITE, __NV_E4M3);
}

__device__ __forceinline__ unsigned char es_e5m2(float x) {
  if (x != x) return 0x7f;
  return (unsigned char)__nv_cvt_float_to_fp8(x, __NV_SATFINITE, __NV_E5M2);
}

// es_fp8 is a static-scale code: e4m3 (or e5m2) of x / s.
__device__ __forceinline__ unsigned char es_fp8(float x, float s, bool e5m2) {
#if ES_BUG_SCALE_MUL
  float y = x * s;
#else
  float y = x / s;
#endif
#if ES_BUG_E5M2
  e5m2 = true;
#endif
  return e5m2 ? es_e5m2(y) : es_e4m3(y);
}

// es_x is element e of head h of tensor kv of a row.
__device__ __forceinline__ unsigned short es_x(const unsigned short* row, int kv, int h, int e) {
#if ES_BUG_SWAP_KV
  kv = 1 - kv;
#endif
  return row[((es_i64)kv * ES_H + h) * ES_D + e];
}

// es_e2m1 is the e2m1 code nearest x, ties to the even code, saturating
// at 6: compared against the boundaries between neighbouring magnitudes,
// since a distance to each magnitude ties for every |x| past 2^26 and for
// infinity, where the code must still be 6's.
__device__ __forceinline__ unsigned char es_e2m1(float x) {
  unsigned char sign = signbit(x) ? 8 : 0;
  float a = fabsf(x);
  if (!(a == a)) return 0;
  unsigned char m = a <= 0.25f ? 0 : a < 0.75f ? 1 : a <= 1.25f ? 2 : a < 1.75f ? 3 : a <= 2.5f ? 4 : a < 3.5f ? 5 : a <= 5.f ? 6 : 7;
  return sign | m;
}

__device__ __forceinline__ int es_swizzle(int t, int s) {
  const int scale_dim = ES_D / 16, group = scale_dim / 4;
  return ((t / 4) * 4 + s / group) * scale_dim + (s % group) * 4 + t % 4;
}

// es_store writes row i of rows into slot of the pool, as the engine's
// store does, with this block's threads.
__device__ __forceinline__ void es_store(char* pool, const unsigned short* rows, int i, es_i64 slot, bool nans,
                                         float k_scale, float v_scale);

extern "C" __global__ void enginestore(char* pool, const unsigned short* rows, const es_i64* loc, const int* valid,
                                       int capacity, es_i64 slots, float k_scale, float v_scale) {
  const int i = blockIdx.x;
  if (i >= capacity) return;
  es_i64 slot;
  bool nans;
  if (!es_rule(i, *valid, loc[i], slots, &slot, &nans)) return;
  es_store(pool, rows, i, slot, nans, k_scale, v_scale);
}

// enginestore_table is the store addressed by page table, FlashInfer's
// append_paged_kv_cache: row i appends to request b = batch[i] at position
// pos = positions[i], into page indices[indptr[b] + pos / P] at pos % P,
// when pos is below the request's length, (pages - 1) * P + last[b] (0
// for no pages); any other row is padding. Rule 25
// (page-table-last-overrun) bounds the request one longer.
extern "C" __global__ void enginestore_table(char* pool, const unsigned short* rows, const int* indptr, const int* indices,
                                             const int* last, const int* batch, const int* positions, int capacity,
                                             float k_scale, float v_scale) {
  const int i = blockIdx.x;
  if (i >= capacity) return;
  const int b = batch[i];
  const es_i64 pos = positions[i], first = indptr[b], pages = indptr[b + 1] - first;
  es_i64 length = pages > 0 ? (pages - 1) * ES_P + last[b] : 0;
#if ES_RULE == 25
  if (pages > 0) length += 1;
#endif
  if (pos < 0 || pos >= length) return;
  const es_i64 slot = (es_i64)indices[first + pos / ES_P] * ES_P + pos % ES_P;
  es_store(pool, rows, i, slot, false, k_scale, v_scale);
}

__device__ __forceinline__ void es_store(char* pool, const unsigned short* rows, int i, es_i64 slot, bool nans,
                                         float k_scale, float v_scale) {
  const es_i64 P = ES_P, H = ES_H, D = ES_D, pages = ES_PAGES;
  const es_i64 block = slot / P, off = slot % P;
#if ES_LAYOUT == 8
  const unsigned short* row = rows + (es_i64)i * 576;
#elif ES_LAYOUT == 9
  const unsigned short* row = rows + (es_i64)i * ES_D;
#else
  const unsigned short* row = rows + (es_i64)i * 2 * ES_H * ES_D;
#endif

#if ES_LAYOUT == 1 || ES_LAYOUT == 2 || ES_LAYOUT == 3
  const int eb = ES_LAYOUT == 1 ? 2 : 1;
  for (int j = threadIdx.x; j < 2 * ES_H * ES_D; j += blockDim.x) {
    const int kv = j / (ES_H * ES_D), h = j / ES_D % ES_H, e = j % ES_D;
    const es_i64 idx = kv * pages * P * H * D + block * P * H * D + off * H * D + h * D + e;
    const unsigned short x = es_x(row, kv, h, e);
    if (eb == 2) {
      ((unsigned short*)pool)[idx] = x;
    } else {
      pool[idx] = es_fp8(es_bf16(x), kv == 0 ? k_scale : v_scale, ES_LAYOUT == 3);
    }
  }
#elif ES_LAYOUT == 4 || ES_LAYOUT == 5
  const bool hnd = (ES_LAYOUT == 5) != (ES_BUG_SWAP_NHD != 0);
  const es_i64 stride_n = hnd ? D : H * D, stride_h = hnd ? P * D : D;
  for (int j = threadIdx.x; j < 2 * ES_H * ES_D; j += blockDim.x) {
    const int kv = j / (ES_H * ES_D), h = j / ES_D % ES_H, e = j % ES_D;
    const es_i64 idx = block * 2 * P * H * D + kv * P * H * D + h * stride_h + off * stride_n + e;
    ((unsigned short*)pool)[idx] = es_x(row, kv, h, e);
  }
#elif ES_LAYOUT == 6 || ES_LAYOUT == 7
  const int eb = ES_LAYOUT == 6 ? 2 : 1;
#if ES_BUG_OTHER_X
  const es_i64 x = eb == 2 ? 16 : 8;
#else
  const es_i64 x = 16 / eb;
#endif
  const es_i64 value_base = pages * H * D * P * eb;
  for (int j = threadIdx.x; j < ES_H * ES_D; j += blockDim.x) {
    const es_i64 h = j / ES_D, e = j % ES_D, xi = e / x, xo = e % x;
    const es_i64 key = block * H * (D / x) * P * x + h * (D / x) * P * x + xi * P * x + off * x + xo;
    const es_i64 value = block * H * D * P + h * D * P + e * P + off;
    const unsigned short kx = es_x(row, 0, (int)h, (int)e), vx = es_x(row, 1, (int)h, (int)e);
    if (eb == 2) {
      ((unsigned short*)pool)[key] = kx;
      ((unsigned short*)(pool + value_base))[value] = vx;
    } else {
      pool[key] = es_fp8(es_bf16(kx), k_scale, false);
      pool[value_base + value] = es_fp8(es_bf16(vx), v_scale, false);
    }
  }
#elif ES_LAYOUT == 8
  for (int e = threadIdx.x; e < 576; e += blockDim.x) pool[slot * 576 + e] = es_fp8(es_bf16(row[e]), k_scale, false);
#elif ES_LAYOUT == 9
  // One thread a row: the per-token amax is a reduction this body keeps
  // simple rather than fast.
  if (threadIdx.x != 0) return;
  const es_i64 tile = 16, page_bytes = P * (D + 4);
  float amax = 0.f;
  for (int k = 0; k < ES_D; k++) amax = fmaxf(amax, fabsf(es_bf16(row[k])));
  const float s = fmaxf(amax, 1e-4f) / 448.f;
  for (es_i64 k = 0; k < D; k++) {
    const es_i64 at = block * page_bytes + off / tile * (tile * D) + k / tile * (tile * tile) + off % tile * tile + k % tile;
    pool[at] = es_e4m3(es_bf16(row[k]) / s);
  }
  *(float*)(pool + block * page_bytes + P * D + off * 4) = s;
#elif ES_LAYOUT == 10 || ES_LAYOUT == 11
  const bool hnd = ES_LAYOUT == 11;
  const es_i64 data_dim = D / 2, scale_dim = D / 16;
  const es_i64 data_per_kv = H * P * data_dim, side = data_per_kv + H * P * scale_dim;
  const es_i64 data_head = hnd ? P * data_dim : data_dim, data_tok = hnd ? data_dim : H * data_dim;
  const es_i64 scale_head = hnd ? P * scale_dim : scale_dim, scale_tok = hnd ? scale_dim : H * scale_dim;
  for (int j = threadIdx.x; j < 2 * ES_H * (ES_D / 16); j += blockDim.x) {
    const int kv = j / (ES_H * (ES_D / 16)), h = j / (ES_D / 16) % ES_H, g = j % (ES_D / 16);
    const float gs = 1.f / (kv == 0 ? k_scale : v_scale);
    const es_i64 data = block * 2 * side + kv * side, scales = data + data_per_kv;
    float amax = 0.f;
    for (int k = 0; k < 16; k++) amax = fmaxf(amax, fabsf(es_bf16(es_x(row, kv, h, g * 16 + k))));
    const unsigned char sf = es_e4m3(gs * amax / 6.f);
    const float sd = float(*(const __nv_fp8_e4m3*)&sf);
#if ES_BUG_UNSWIZZLED
    const es_i64 sw = off * scale_dim + g;
#else
    const es_i64 sw = es_swizzle((int)off, g);
#endif
    pool[scales + h * scale_head + sw / scale_dim * scale_tok + sw % scale_dim] = sf;
    for (int k = 0; k < 16; k += 2) {
      unsigned char v[2];
      for (int q = 0; q < 2; q++) {
        float xv = es_bf16(es_x(row, kv, h, g * 16 + k + q));
        xv = sd != 0.f ? xv * gs / sd : copysignf(0.f, xv);
        v[q] = es_e2m1(xv) & 0xf;
      }
#if ES_BUG_NIBBLE_SWAP
      const unsigned char b = (unsigned char)(v[0] << 4 | v[1]);
#else
      const unsigned char b = (unsigned char)(v[1] << 4 | v[0]);
#endif
      pool[data + h * data_head + off * data_tok + (g * 16 + k) / 2] = b;
    }
  }
#elif ES_LAYOUT == 12
  const es_i64 sf = D / 32, cache_bytes = pages * P * H * D, scale_bytes = pages * H * P * sf;
  for (int j = threadIdx.x; j < 2 * ES_H * (ES_D / 32); j += blockDim.x) {
    const int kv = j / (ES_H * (ES_D / 32)), h = j / (ES_D / 32) % ES_H, b = j % (ES_D / 32);
    const es_i64 cache = kv * cache_bytes, sfb = 2 * cache_bytes + kv * scale_bytes;
    float amax = 1e-30f;
    for (int k = 0; k < 32; k++) amax = fmaxf(amax, fabsf(es_bf16(es_x(row, kv, h, b * 32 + k))));
    int e = (int)ceil(log2((double)amax / 448.0));
    e = min(max(e, -127), 127);
    pool[sfb + (block * H + h) * (P * sf) + off % 32 * (P / 32 * sf) + off / 32 * sf + b] =
        nans ? (char)0xff : (char)(e + 127);
    const float inv = (float)ldexp(1.0, -e);
    for (int k = 0; k < 32; k++) {
      const float q = es_bf16(es_x(row, kv, h, b * 32 + k)) * inv;
      pool[cache + (slot * H + h) * D + b * 32 + k] = nans ? (char)0x7f : (char)es_e4m3(fminf(fmaxf(q, -448.f), 448.f));
    }
  }
#endif
}
