// store.cuh: the bodies of the bundled store kernels, shared by the
// plugins. A plugin's .cu file is appended to this one: it defines a Rule
// (which rows are stored, into which slot) and its extern "C" entry points,
// which call kv_bf16_store<Rule> or kv_fp8_store<Rule>. The plugin's CPU
// kernel makes the same decisions in Go; gpustore derives the macros below
// from the CPU kernel's own geometry, so both compute addresses from one
// description.
//
// Macros (set by gpustore, never by hand):
//   KV_HEAD_DIM          elements per row, a multiple of 16
//   KV_PAGE_SIZE         the layout's page size
//   KV_TOKENS_PER_PAGE   tokens per addressing page (the page size for a
//                        paged layout, 1 for a row layout)
//   KV_PAGE_BYTES        bytes per addressing page
//   KV_VALUE_BYTES       bytes of one token's values inside its page; the
//                        scales follow the page's values, 4 bytes each
//   KV_ROWS_PER_THREAD   rows each bf16 thread group or fp8 warp moves, all
//                        loaded before any is stored (memory parallelism)
//   KV_BF16_TPR          threads per bf16 row (16 for D = 128: one uint4 each)
//   KV_BF16_RPB          bf16 rows per block and pass
//   KV_FP8_WARPS         warps per fp8 block (one row per warp and pass)
//   KV_FP8               1 to compile the fp8 body (it needs cuda_fp8.h), 0
//                        for the bf16 one; a program holds one of them
//   KV_SCALE_FLOOR       1: scale = max(1e-4, amax) / 448; 0: amax / 448
//   KV_ROUND_TOWARD_ZERO 1: truncate to e4m3; 0: nearest even, saturated
//
// A Rule is a struct with
//   __device__ static bool store(int i, int n, kv_i64 loc, kv_i64 slots, kv_i64* slot);
// returning whether row i (of n valid rows) is stored and into which slot.

typedef long long kv_i64;

// kv_offsets is where slot's values and scale go, relative to the pool base.
// The page is the floor of slot / tokens per page, as a shift by the page
// bits gives: slot -1 is the last token of page -1, inside the leading guard.
__device__ __forceinline__ void kv_offsets(kv_i64 slot, kv_i64* value, kv_i64* scale) {
  kv_i64 page = slot / KV_TOKENS_PER_PAGE;
  kv_i64 off = slot % KV_TOKENS_PER_PAGE;
  if (off < 0) {
    page -= 1;
    off += KV_TOKENS_PER_PAGE;
  }
  const kv_i64 base = page * (kv_i64)KV_PAGE_BYTES;
  *value = base + off * (kv_i64)KV_VALUE_BYTES;
  *scale = base + (kv_i64)KV_TOKENS_PER_PAGE * KV_VALUE_BYTES + off * 4;
}

// ---- bf16: rows copied as 16-byte vectors ----------------------------------

#if !KV_FP8

#define KV_BF16_CHUNKS (KV_HEAD_DIM * 2 / 16) /* uint4 per row */
#define KV_BF16_CPT ((KV_BF16_CHUNKS + KV_BF16_TPR - 1) / KV_BF16_TPR) /* uint4 per thread and row */
#define KV_BF16_THREADS (KV_BF16_TPR * KV_BF16_RPB)

// kv_bf16_store: a block of KV_BF16_RPB groups of KV_BF16_TPR threads covers
// KV_BF16_RPB * KV_ROWS_PER_THREAD rows; each group moves KV_ROWS_PER_THREAD
// rows, loading all of them (streaming loads: the rows are read once) before
// storing any. Loads do not wait for the rule, so they overlap the loc load.
template <class Rule>
__device__ __forceinline__ void kv_bf16_store(char* __restrict__ pool, const uint4* __restrict__ rows,
                                              const kv_i64* __restrict__ loc, const int* __restrict__ valid,
                                              int capacity, kv_i64 slots) {
  const int n = *valid;
  const int lane = threadIdx.x % KV_BF16_TPR;
  const int first = blockIdx.x * (KV_BF16_RPB * KV_ROWS_PER_THREAD) + threadIdx.x / KV_BF16_TPR;
  uint4 v[KV_ROWS_PER_THREAD][KV_BF16_CPT];
  kv_i64 at[KV_ROWS_PER_THREAD];
  bool put[KV_ROWS_PER_THREAD];
#pragma unroll
  for (int k = 0; k < KV_ROWS_PER_THREAD; k++) {
    const int i = first + k * KV_BF16_RPB;
    put[k] = false;
    at[k] = 0;
    if (i >= capacity) continue;
    kv_i64 slot = 0, scale;
    put[k] = Rule::store(i, n, loc[i], slots, &slot);
    kv_offsets(slot, &at[k], &scale);
#pragma unroll
    for (int c = 0; c < KV_BF16_CPT; c++) {
      const int ch = lane + c * KV_BF16_TPR;
      if (ch < KV_BF16_CHUNKS) v[k][c] = __ldcs(rows + (kv_i64)i * KV_BF16_CHUNKS + ch);
    }
  }
#pragma unroll
  for (int k = 0; k < KV_ROWS_PER_THREAD; k++) {
    if (!put[k]) continue;
    uint4* dst = (uint4*)(pool + at[k]);
#pragma unroll
    for (int c = 0; c < KV_BF16_CPT; c++) {
      const int ch = lane + c * KV_BF16_TPR;
      if (ch < KV_BF16_CHUNKS) __stcs(dst + ch, v[k][c]);
    }
  }
}

#endif  // !KV_FP8

// ---- fp8: a warp quantizes a row --------------------------------------------

#if KV_FP8
#include <cuda_fp8.h>

#define KV_FP8_CHUNKS ((KV_HEAD_DIM + 127) / 128) /* 4-element groups per lane */

// kv_e4m3_rtz truncates to e4m3 (the round-toward-zero mutant), bit for bit
// as plugins/internal/fp8.FromFloat32TowardZero.
__device__ __forceinline__ unsigned kv_e4m3_rtz(float x) {
  unsigned u = __float_as_uint(x);
  const unsigned sign = (u >> 24) & 0x80u;
  u &= 0x7fffffffu;
  if (u > 0x7f800000u) return 0x7fu;          // NaN
  if (u >= 0x43e00000u) return sign | 0x7eu;  // 448 and above, infinity included
  const int exp = (int)(u >> 23) - 127;
  if (exp < -6) {  // e4m3 subnormal: m · 2^-9; scaling by 2^9 is exact
    return sign | (unsigned)truncf(__uint_as_float(u) * 512.0f);
  }
  const unsigned keep = (u >> 20) & 7u;
  const int e = exp + 7;
  if (e > 15 || (e == 15 && keep == 7)) return sign | 0x7eu;
  return sign | ((unsigned)e << 3) | keep;
}

// kv_e4m3 is the element conversion: round to nearest even with saturation
// (the hardware cvt), or truncation for the mutant. Every NaN becomes 0x7f,
// as in the CPU reference, rather than whatever NaN the hardware returns.
__device__ __forceinline__ unsigned kv_e4m3(float x) {
#if KV_ROUND_TOWARD_ZERO
  return kv_e4m3_rtz(x);
#else
  if (x != x) return 0x7fu;
  return (unsigned)__nv_cvt_float_to_fp8(x, __NV_SATFINITE, __NV_E4M3);
#endif
}

__device__ __forceinline__ float kv_bf16(unsigned bits) { return __uint_as_float(bits << 16); }

// kv_max is the CPU's `if a > amax { amax = a }`: a NaN a, quiet or
// signalling, leaves amax alone. (IEEE maxNum, and so some fmaxf, turns a
// signalling NaN into NaN.) amax itself is never NaN.
__device__ __forceinline__ float kv_max(float amax, float a) { return a > amax ? a : amax; }

// kv_scale is max(1e-4, amax) / 448 with IEEE division (no fast math), so it
// is the CPU's float32 bit for bit.
__device__ __forceinline__ float kv_scale(float amax) {
#if KV_SCALE_FLOOR
  return fmaxf(1e-4f, amax) / 448.0f;
#else
  return amax / 448.0f;
#endif
}

// kv_fp8_store: each warp takes KV_ROWS_PER_THREAD rows, loading them all
// first. Lane l holds elements 4l..4l+3 of each 128-element chunk (one
// 8-byte load, 256 B per warp), the row's max |x| is a butterfly of warp
// shuffles that ignore NaN as the CPU's comparison does, each lane
// stores its four codes as one 4-byte word (128 B per warp, coalesced), and
// lane 0 stores the float32 scale. Out-of-range rows and skipped rows still
// join the shuffles, which need the whole warp.
template <class Rule>
__device__ __forceinline__ void kv_fp8_store(char* __restrict__ pool, const unsigned short* __restrict__ rows,
                                             const kv_i64* __restrict__ loc, const int* __restrict__ valid,
                                             int capacity, kv_i64 slots) {
  const int n = *valid;
  const int lane = threadIdx.x & 31;
  const int first = blockIdx.x * (KV_FP8_WARPS * KV_ROWS_PER_THREAD) + (threadIdx.x >> 5);
  float x[KV_ROWS_PER_THREAD][KV_FP8_CHUNKS][4];
  kv_i64 value[KV_ROWS_PER_THREAD], scale[KV_ROWS_PER_THREAD];
  bool put[KV_ROWS_PER_THREAD];
#pragma unroll
  for (int k = 0; k < KV_ROWS_PER_THREAD; k++) {
    const int i = first + k * KV_FP8_WARPS;
    put[k] = false;
    value[k] = scale[k] = 0;
#pragma unroll
    for (int c = 0; c < KV_FP8_CHUNKS; c++) x[k][c][0] = x[k][c][1] = x[k][c][2] = x[k][c][3] = 0.0f;
    if (i >= capacity) continue;
    kv_i64 slot = 0;
    put[k] = Rule::store(i, n, loc[i], slots, &slot);
    kv_offsets(slot, &value[k], &scale[k]);
#pragma unroll
    for (int c = 0; c < KV_FP8_CHUNKS; c++) {
      const int e = c * 128 + lane * 4;
      if (e < KV_HEAD_DIM) {
        const uint2 u = __ldcs((const uint2*)(rows + (kv_i64)i * KV_HEAD_DIM + e));
        x[k][c][0] = kv_bf16(u.x & 0xffffu);
        x[k][c][1] = kv_bf16(u.x >> 16);
        x[k][c][2] = kv_bf16(u.y & 0xffffu);
        x[k][c][3] = kv_bf16(u.y >> 16);
      }
    }
  }
#pragma unroll
  for (int k = 0; k < KV_ROWS_PER_THREAD; k++) {
    float amax = 0.0f;
#pragma unroll
    for (int c = 0; c < KV_FP8_CHUNKS; c++)
#pragma unroll
      for (int j = 0; j < 4; j++) amax = kv_max(amax, fabsf(x[k][c][j]));
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) amax = kv_max(amax, __shfl_xor_sync(0xffffffffu, amax, o));
    if (!put[k]) continue;
    const float s = kv_scale(amax);
#pragma unroll
    for (int c = 0; c < KV_FP8_CHUNKS; c++) {
      const int e = c * 128 + lane * 4;
      if (e < KV_HEAD_DIM) {
        const unsigned w = kv_e4m3(x[k][c][0] / s) | kv_e4m3(x[k][c][1] / s) << 8 |
                           kv_e4m3(x[k][c][2] / s) << 16 | kv_e4m3(x[k][c][3] / s) << 24;
        __stcs((unsigned*)(pool + value[k] + e), w);
      }
    }
    if (lane == 0) __stcs((float*)(pool + scale[k]), s);
  }
}
#endif  // KV_FP8
