// store.cuh: the bodies of the bundled store kernels, shared by the
// plugins. A plugin's .cu file is appended to this one: it defines a Rule
// (which rows are stored, into which slot) and its extern "C" entry points,
// which call kv_bf16_store<Rule> or kv_fp8_store<Rule>. The plugin's CPU
// kernel makes the same decisions in Go; gpustore derives the macros below
// from the CPU kernel's own geometry, so both compute addresses from one
// description.
//
// Macros (set by gpustore, never by hand). What is stored:
//   KV_HEAD_DIM          elements per row, a multiple of 8
//   KV_PAGE_SIZE         the layout's page size
//   KV_TOKENS_PER_PAGE   tokens per addressing page (the page size for a
//                        paged layout, 1 for a row layout)
//   KV_PAGE_BYTES        bytes per addressing page
//   KV_VALUE_BYTES       bytes of one token's values inside its page; the
//                        scales follow the page's values, 4 bytes each
//   KV_FP8               1 to compile the fp8 body (it needs cuda_fp8.h), 0
//                        for the bf16 one; a program holds one of them
//   KV_SCALE_FLOOR       1: scale = max(1e-4, amax) / 448; 0: amax / 448
//   KV_ROUND_TOWARD_ZERO 1: truncate to e4m3; 0: nearest even, saturated
// How it runs (gpustore.Tuning; none of these changes a stored byte):
//   KV_BLOCK_THREADS     threads per block, as launched
//   KV_ROWS_PER_THREAD   rows each thread group moves, all loaded before any
//                        is stored (memory parallelism)
//   KV_BF16_TPR          threads per bf16 row (16 for D = 128: one uint4 each)
//   KV_FP8_LPR           lanes per fp8 row, a power of two up to 32: the
//                        row's max |x| is a shuffle butterfly over them
//   KV_FP8_EPL           bf16 elements an fp8 lane loads at once: 4 (an
//                        8-byte load) or 8 (16 bytes)
//   KV_LOAD_HINT         rows and slots: 0 plain loads, 1 streaming
//                        (ld.global.cs), 2 non-coherent (ld.global.nc), 3
//                        non-coherent, no L1 allocation, 256 B L2 prefetch, 4
//                        non-coherent, no L1 allocation, L2 evict-first policy
//   KV_STORE_HINT        0 plain stores, 1 streaming (st.global.cs), 2 no L1
//                        allocation, 3 no L1 allocation and L2 evict-first
//                        policy, 4 the same with evict-last (the policies
//                        need sm_80; older devices get hints 3 and 2)
//   KV_FP8_DIV           0: the quotient x / s as written; 1 or 2: the same
//                        IEEE quotient from a correctly rounded reciprocal
//                        and 1 or 2 FMA corrections (see kv_quotients)
//   KV_FP8_PAIR          1: convert two quotients per cvt instruction
//   KV_FP8_FMAX          1: the row max by fmaxf, 0: by comparison (equal
//                        here: the running max is never NaN)
//   KV_IDX32             1: 32-bit offsets inside the pool (pools under 2 GiB
//                        and slots in int range only; forced on by the
//                        offset-int32 mutant, whose offsets then wrap)
// Mutations (gpustore.Mutation; 0 in every correct kernel): a mutant's bug
// in the shared bodies, as the CPU kernel of the same mutant makes it:
//   KV_VEC16_NO_TAIL     bf16: rows stored in 16-element vectors only, the
//                        last 8 elements of a head dim that is not a
//                        multiple of 16 never stored
//   KV_BF16_DAZ          bf16: each element flushed as float32 arithmetic
//                        built with denormals-are-zero would: a subnormal
//                        becomes a zero of its sign
//   KV_ZERO_ROW_FAST     fp8: a row whose max |x| is 0 stored as +0 codes
//                        and the floor scale (its -0 elements lose the sign)
//   KV_NAN_PAIR          fp8: NaN propagated by a ballot over the lanes of
//                        two rows: a NaN in either row (a padded one too)
//                        makes both rows' scales and codes NaN
//
// A Rule is a struct with
//   __device__ static bool store(int i, int n, kv_i64 loc, kv_i64 slots, kv_i64* slot);
// returning whether row i (of n valid rows) is stored and into which slot.

typedef long long kv_i64;

#if KV_IDX32
typedef int kv_off;
#else
typedef kv_i64 kv_off;
#endif

// kv_offsets is where slot's values and scale go, relative to the pool base.
// The page is the floor of slot / tokens per page, as a shift by the page
// bits gives: slot -1 is the last token of page -1, inside the leading guard.
__device__ __forceinline__ void kv_offsets(kv_i64 slot64, kv_off* value, kv_off* scale) {
  const kv_off slot = (kv_off)slot64;
  kv_off page = slot / KV_TOKENS_PER_PAGE;
  kv_off off = slot % KV_TOKENS_PER_PAGE;
  if (off < 0) {
    page -= 1;
    off += KV_TOKENS_PER_PAGE;
  }
  const kv_off base = page * (kv_off)KV_PAGE_BYTES;
  *value = base + off * (kv_off)KV_VALUE_BYTES;
  *scale = base + (kv_off)KV_TOKENS_PER_PAGE * KV_VALUE_BYTES + off * 4;
}

// ---- loads and stores with the configured cache hints ---------------------

// L2 cache policies (load hint 4, store hints 3 and 4) need sm_80: older
// devices take the nearest hint without one.
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ < 800
#if KV_LOAD_HINT == 4
#undef KV_LOAD_HINT
#define KV_LOAD_HINT 3
#endif
#if KV_STORE_HINT >= 3
#undef KV_STORE_HINT
#define KV_STORE_HINT 2
#endif
#endif

// L2 cache policies: what a load (hint 4) or store (hints 3, 4) touches is
// evicted first, or last. createpolicy only computes a register (not
// volatile: the compiler may share one value among the accesses).
#define KV_L2_POLICY(fn, priority)                                             \
  __device__ __forceinline__ unsigned long long fn() {                         \
    unsigned long long p;                                                      \
    asm("createpolicy.fractional.L2::" #priority ".b64 %0, 1.0;" : "=l"(p));   \
    return p;                                                                  \
  }
#if KV_LOAD_HINT == 4
KV_L2_POLICY(kv_load_policy, evict_first)
#endif
#if KV_STORE_HINT == 3
KV_L2_POLICY(kv_store_policy, evict_first)
#elif KV_STORE_HINT == 4
KV_L2_POLICY(kv_store_policy, evict_last)
#endif

// kv_ld is a load under the hint's cache operator where CUDA has an
// intrinsic for it: streaming (1) or read-only (2 and up, which the vector
// loads below replace with their own PTX for 3 and 4).
template <typename T>
__device__ __forceinline__ T kv_ld(const T* p) {
#if KV_LOAD_HINT == 1
  return __ldcs(p);
#elif KV_LOAD_HINT >= 2
  return __ldg(p);
#else
  return *p;
#endif
}

__device__ __forceinline__ kv_i64 kv_ld_loc(const kv_i64* p) { return kv_ld(p); }

__device__ __forceinline__ uint4 kv_ld16(const uint4* p) {
#if KV_LOAD_HINT == 3
  uint4 v;
  asm("ld.global.nc.L1::no_allocate.L2::256B.v4.u32 {%0, %1, %2, %3}, [%4];"
      : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w)
      : "l"(p));
  return v;
#elif KV_LOAD_HINT == 4
  uint4 v;
  asm("ld.global.nc.L1::no_allocate.L2::cache_hint.v4.u32 {%0, %1, %2, %3}, [%4], %5;"
      : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w)
      : "l"(p), "l"(kv_load_policy()));
  return v;
#else
  return kv_ld(p);
#endif
}

__device__ __forceinline__ uint2 kv_ld8(const uint2* p) {
#if KV_LOAD_HINT == 3
  uint2 v;
  asm("ld.global.nc.L1::no_allocate.L2::256B.v2.u32 {%0, %1}, [%2];" : "=r"(v.x), "=r"(v.y) : "l"(p));
  return v;
#elif KV_LOAD_HINT == 4
  uint2 v;
  asm("ld.global.nc.L1::no_allocate.L2::cache_hint.v2.u32 {%0, %1}, [%2], %3;"
      : "=r"(v.x), "=r"(v.y)
      : "l"(p), "l"(kv_load_policy()));
  return v;
#else
  return kv_ld(p);
#endif
}

__device__ __forceinline__ void kv_st16(uint4* p, uint4 v) {
#if KV_STORE_HINT == 1
  __stcs(p, v);
#elif KV_STORE_HINT == 2
  asm volatile("st.global.L1::no_allocate.v4.u32 [%0], {%1, %2, %3, %4};" ::"l"(p), "r"(v.x), "r"(v.y), "r"(v.z),
               "r"(v.w)
               : "memory");
#elif KV_STORE_HINT >= 3
  asm volatile("st.global.L1::no_allocate.L2::cache_hint.v4.u32 [%0], {%1, %2, %3, %4}, %5;" ::"l"(p), "r"(v.x),
               "r"(v.y), "r"(v.z), "r"(v.w), "l"(kv_store_policy())
               : "memory");
#else
  *p = v;
#endif
}

__device__ __forceinline__ void kv_st8(uint2* p, uint2 v) {
#if KV_STORE_HINT == 1
  __stcs(p, v);
#elif KV_STORE_HINT == 2
  asm volatile("st.global.L1::no_allocate.v2.u32 [%0], {%1, %2};" ::"l"(p), "r"(v.x), "r"(v.y) : "memory");
#elif KV_STORE_HINT >= 3
  asm volatile("st.global.L1::no_allocate.L2::cache_hint.v2.u32 [%0], {%1, %2}, %3;" ::"l"(p), "r"(v.x), "r"(v.y),
               "l"(kv_store_policy())
               : "memory");
#else
  *p = v;
#endif
}

__device__ __forceinline__ void kv_st4(unsigned* p, unsigned v) {
#if KV_STORE_HINT == 1
  __stcs(p, v);
#elif KV_STORE_HINT == 2
  asm volatile("st.global.L1::no_allocate.u32 [%0], %1;" ::"l"(p), "r"(v) : "memory");
#elif KV_STORE_HINT >= 3
  asm volatile("st.global.L1::no_allocate.L2::cache_hint.u32 [%0], %1, %2;" ::"l"(p), "r"(v), "l"(kv_store_policy()) : "memory");
#else
  *p = v;
#endif
}

// ---- bf16: rows copied as 16-byte vectors ----------------------------------

#if !KV_FP8

#define KV_BF16_CHUNKS (KV_HEAD_DIM * 2 / 16)                          /* uint4 per row */
#define KV_BF16_CPT ((KV_BF16_CHUNKS + KV_BF16_TPR - 1) / KV_BF16_TPR) /* uint4 per thread and row */
#define KV_BF16_GROUPS (KV_BLOCK_THREADS / KV_BF16_TPR)                /* rows per block and pass */
#if KV_VEC16_NO_TAIL
#define KV_BF16_STORED (KV_HEAD_DIM / 16 * 2) /* uint4 stored per row: whole 16-element vectors only (a mutant) */
#else
#define KV_BF16_STORED KV_BF16_CHUNKS
#endif

// kv_daz2 flushes the subnormal halves of a word of two bf16 to zeros of
// their sign: the denormals-are-zero mutant.
__device__ __forceinline__ unsigned kv_daz2(unsigned w) {
  if ((w & 0x00007f80u) == 0) w &= 0xffff8000u;
  if ((w & 0x7f800000u) == 0) w &= 0x8000ffffu;
  return w;
}

__device__ __forceinline__ uint4 kv_daz(uint4 v) {
#if KV_BF16_DAZ
  v.x = kv_daz2(v.x);
  v.y = kv_daz2(v.y);
  v.z = kv_daz2(v.z);
  v.w = kv_daz2(v.w);
#endif
  return v;
}

// kv_bf16_store: a block of KV_BF16_GROUPS groups of KV_BF16_TPR threads
// covers KV_BF16_GROUPS * KV_ROWS_PER_THREAD rows; each group moves
// KV_ROWS_PER_THREAD rows, loading all of them before storing any. Loads
// do not wait for the rule, so they overlap the loc load.
template <class Rule>
__device__ __forceinline__ void kv_bf16_store(char* __restrict__ pool, const uint4* __restrict__ rows,
                                              const kv_i64* __restrict__ loc, const int* __restrict__ valid,
                                              int capacity, kv_i64 slots) {
  const int n = *valid;
  const int lane = threadIdx.x % KV_BF16_TPR;
  const int first = blockIdx.x * (KV_BF16_GROUPS * KV_ROWS_PER_THREAD) + threadIdx.x / KV_BF16_TPR;
  uint4 v[KV_ROWS_PER_THREAD][KV_BF16_CPT];
  kv_off at[KV_ROWS_PER_THREAD];
  bool put[KV_ROWS_PER_THREAD];
#pragma unroll
  for (int k = 0; k < KV_ROWS_PER_THREAD; k++) {
    const int i = first + k * KV_BF16_GROUPS;
    put[k] = false;
    at[k] = 0;
    if (i >= capacity) continue;
    kv_i64 slot = 0;
    kv_off scale;
    put[k] = Rule::store(i, n, kv_ld_loc(loc + i), slots, &slot);
    kv_offsets(slot, &at[k], &scale);
#pragma unroll
    for (int c = 0; c < KV_BF16_CPT; c++) {
      const int ch = lane + c * KV_BF16_TPR;
      if (ch < KV_BF16_CHUNKS) v[k][c] = kv_ld16(rows + (kv_i64)i * KV_BF16_CHUNKS + ch);
    }
  }
#pragma unroll
  for (int k = 0; k < KV_ROWS_PER_THREAD; k++) {
    if (!put[k]) continue;
    uint4* dst = (uint4*)(pool + at[k]);
#pragma unroll
    for (int c = 0; c < KV_BF16_CPT; c++) {
      const int ch = lane + c * KV_BF16_TPR;
      if (ch < KV_BF16_STORED) kv_st16(dst + ch, kv_daz(v[k][c]));
    }
  }
}

#endif  // !KV_FP8

// ---- fp8: a group of lanes quantizes a row ---------------------------------

#if KV_FP8
#include <cuda_fp8.h>

#define KV_FP8_SPAN (KV_FP8_LPR * KV_FP8_EPL)                          /* elements per chunk */
#define KV_FP8_CHUNKS ((KV_HEAD_DIM + KV_FP8_SPAN - 1) / KV_FP8_SPAN) /* chunks per row */
#define KV_FP8_GROUPS (KV_BLOCK_THREADS / KV_FP8_LPR)                  /* rows per block and pass */

// The value records' alignment (the pool base is 16-byte aligned): a lane's
// 8 codes go out as one 8-byte store where records allow it.
#if KV_PAGE_BYTES % 8 == 0 && KV_VALUE_BYTES % 8 == 0
#define KV_VALUE_ALIGN 8
#else
#define KV_VALUE_ALIGN 4
#endif

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

// kv_e4m3x2 converts a (low byte) and b (high byte) as kv_e4m3 does, with
// one cvt instruction for the pair: the hardware rounds each half as it
// rounds a single value.
__device__ __forceinline__ unsigned kv_e4m3x2(float a, float b) {
#if KV_ROUND_TOWARD_ZERO
  return kv_e4m3_rtz(a) | kv_e4m3_rtz(b) << 8;
#else
  unsigned w = (unsigned)__nv_cvt_float2_to_fp8x2(make_float2(a, b), __NV_SATFINITE, __NV_E4M3);
  if (a != a) w = (w & 0xff00u) | 0x007fu;
  if (b != b) w = (w & 0x00ffu) | 0x7f00u;
  return w;
#endif
}

// kv_code4 is four quotients' codes as one little-endian word.
__device__ __forceinline__ unsigned kv_code4(float q0, float q1, float q2, float q3) {
#if KV_FP8_PAIR
  return kv_e4m3x2(q0, q1) | kv_e4m3x2(q2, q3) << 16;
#else
  return kv_e4m3(q0) | kv_e4m3(q1) << 8 | kv_e4m3(q2) << 16 | kv_e4m3(q3) << 24;
#endif
}

// kv_max is the CPU's `if a > amax { amax = a }`: a NaN a, quiet or
// signalling, leaves amax alone. amax itself is never NaN, so fmaxf (PTX
// max.f32 returns the non-NaN operand) is the same function.
__device__ __forceinline__ float kv_max(float amax, float a) {
#if KV_FP8_FMAX
  return fmaxf(amax, a);
#else
  return a > amax ? a : amax;
#endif
}

// kv_scale is max(1e-4, amax) / 448 with IEEE division (no fast math), so it
// is the CPU's float32 bit for bit.
__device__ __forceinline__ float kv_scale(float amax) {
#if KV_SCALE_FLOOR
  return fmaxf(1e-4f, amax) / 448.0f;
#else
  return amax / 448.0f;
#endif
}

// kv_divisor is a row's scale and what its divisions share: its correctly
// rounded reciprocal, and whether the scale lies in the range where the
// corrected quotient is proven (see kv_quotients).
struct kv_divisor {
  float s, r;
  bool fast;
};

__device__ __forceinline__ kv_divisor kv_divisor_of(float s) {
  kv_divisor d;
  d.s = s;
#if KV_FP8_DIV
  d.r = __frcp_rn(s);
  d.fast = s >= 0x1p-60f && s <= 0x1p60f;
#else
  d.r = 0.0f;
  d.fast = false;
#endif
  return d;
}

// kv_quotients sets q[j] to the IEEE quotient x[j] / s, rounded to nearest
// even: what the CPU computes. With KV_FP8_DIV it is had from r = RN(1/s):
// q = RN(x r), then one or two Markstein corrections q += RN(x - q s) r,
// each residual exact in an FMA. With r correctly rounded and q within an
// ulp of x / s, one correction rounds correctly (Markstein's theorem); the
// first brings q within an ulp, so two are correct by the theorem alone.
// The theorem needs every step clear of underflow and overflow: a scale in
// [2^-60, 2^60] and |x| >= 2^-40 keep each quotient above 2^-100 and each
// residual normal. The quotient has x's sign (s > 0), which copysignf
// restores where a correction of a zero x made -0 into +0. Anything else
// (a tiny x, a scale out of range; a NaN goes through as NaN) divides: the
// branch is rare, and taken for the lane's whole chunk so that the
// compiler keeps it a branch. The GPU test
// TestDivisionExhaustive checks both forms against x / s over every bf16
// x and every scale a bf16 row can have.
__device__ __forceinline__ void kv_quotients(const float* x, const kv_divisor& d, float* q) {
#if KV_FP8_DIV
  bool slow = !d.fast;
#pragma unroll
  for (int j = 0; j < KV_FP8_EPL; j++) {
    float v = __fmul_rn(x[j], d.r);
    float e = __fmaf_rn(-v, d.s, x[j]);
    v = __fmaf_rn(e, d.r, v);
#if KV_FP8_DIV >= 2
    e = __fmaf_rn(-v, d.s, x[j]);
    v = __fmaf_rn(e, d.r, v);
#endif
    q[j] = copysignf(v, x[j]);
    slow |= fabsf(x[j]) < 0x1p-40f && x[j] != 0.0f;
  }
  if (slow) {
#pragma unroll
    for (int j = 0; j < KV_FP8_EPL; j++) q[j] = x[j] / d.s;
  }
#else
#pragma unroll
  for (int j = 0; j < KV_FP8_EPL; j++) q[j] = x[j] / d.s;
#endif
}

__device__ __forceinline__ float kv_bf16(unsigned bits) { return __uint_as_float(bits << 16); }

// kv_ld_bf16 loads KV_FP8_EPL bf16 at p as floats.
__device__ __forceinline__ void kv_ld_bf16(const unsigned short* p, float* x) {
#if KV_FP8_EPL == 8
  const uint4 u = kv_ld16((const uint4*)p);
  const unsigned w[4] = {u.x, u.y, u.z, u.w};
#else
  const uint2 u = kv_ld8((const uint2*)p);
  const unsigned w[2] = {u.x, u.y};
#endif
#pragma unroll
  for (int m = 0; m < KV_FP8_EPL / 2; m++) {
    x[2 * m] = __uint_as_float(w[m] << 16);
    x[2 * m + 1] = __uint_as_float(w[m] & 0xffff0000u);
  }
}

// kv_put_codes quantizes KV_FP8_EPL values and stores their codes at dst.
__device__ __forceinline__ void kv_put_codes(char* dst, const float* x, const kv_divisor& s) {
  float q[KV_FP8_EPL];
  kv_quotients(x, s, q);
  unsigned w[KV_FP8_EPL / 4];
#pragma unroll
  for (int m = 0; m < KV_FP8_EPL / 4; m++) w[m] = kv_code4(q[4 * m], q[4 * m + 1], q[4 * m + 2], q[4 * m + 3]);
#if KV_FP8_EPL == 8 && KV_VALUE_ALIGN >= 8
  kv_st8((uint2*)dst, make_uint2(w[0], w[1]));
#else
#pragma unroll
  for (int m = 0; m < KV_FP8_EPL / 4; m++) kv_st4((unsigned*)dst + m, w[m]);
#endif
}

// kv_put_same stores EPL codes all equal to byte b at dst (the mutants'
// fast paths).
__device__ __forceinline__ void kv_put_same(char* dst, unsigned b) {
  const unsigned w = b * 0x01010101u;
#pragma unroll
  for (int m = 0; m < KV_FP8_EPL / 4; m++) kv_st4((unsigned*)dst + m, w);
}

// kv_pair_nan is whether any lane of the two rows this lane's row is
// paired with (in a warp, rows two by two) saw a NaN: the nan-pair-scale
// mutant's vote. Every lane of the warp calls it.
__device__ __forceinline__ bool kv_pair_nan(bool nan) {
  const unsigned votes = __ballot_sync(0xffffffffu, nan);
  const int width = 2 * KV_FP8_LPR < 32 ? 2 * KV_FP8_LPR : 32;
  const unsigned mask = width == 32 ? 0xffffffffu : ((1u << width) - 1u);
  return ((votes >> ((threadIdx.x % 32) / width * width)) & mask) != 0;
}

// kv_fp8_store: a block holds KV_FP8_GROUPS groups of KV_FP8_LPR lanes; each
// group quantizes KV_ROWS_PER_THREAD rows, loading them all first. In each
// chunk of a row, lane l holds elements l·EPL .. l·EPL+EPL-1 (one 8- or
// 16-byte load); the row's max |x| is a butterfly of shuffles over the
// group's lanes that ignore NaN as the CPU's comparison does; each lane
// stores its EPL codes (the group's stores are contiguous), and the group's
// lane 0 stores the float32 scale. Out-of-range and skipped rows still join
// the shuffles, which need the whole warp.
template <class Rule>
__device__ __forceinline__ void kv_fp8_store(char* __restrict__ pool, const unsigned short* __restrict__ rows,
                                             const kv_i64* __restrict__ loc, const int* __restrict__ valid,
                                             int capacity, kv_i64 slots) {
  const int n = *valid;
  const int lane = threadIdx.x % KV_FP8_LPR;
  const int first = blockIdx.x * (KV_FP8_GROUPS * KV_ROWS_PER_THREAD) + threadIdx.x / KV_FP8_LPR;
  float x[KV_ROWS_PER_THREAD][KV_FP8_CHUNKS][KV_FP8_EPL];
  kv_off value[KV_ROWS_PER_THREAD], scale[KV_ROWS_PER_THREAD];
  bool put[KV_ROWS_PER_THREAD];
#pragma unroll
  for (int k = 0; k < KV_ROWS_PER_THREAD; k++) {
    const int i = first + k * KV_FP8_GROUPS;
    put[k] = false;
    value[k] = scale[k] = 0;
#pragma unroll
    for (int c = 0; c < KV_FP8_CHUNKS; c++)
#pragma unroll
      for (int j = 0; j < KV_FP8_EPL; j++) x[k][c][j] = 0.0f;
    if (i >= capacity) continue;
    kv_i64 slot = 0;
    put[k] = Rule::store(i, n, kv_ld_loc(loc + i), slots, &slot);
    kv_offsets(slot, &value[k], &scale[k]);
#pragma unroll
    for (int c = 0; c < KV_FP8_CHUNKS; c++) {
      const int e = c * KV_FP8_SPAN + lane * KV_FP8_EPL;
      if (e < KV_HEAD_DIM) kv_ld_bf16(rows + (kv_i64)i * KV_HEAD_DIM + e, x[k][c]);
    }
  }
#pragma unroll
  for (int k = 0; k < KV_ROWS_PER_THREAD; k++) {
    float amax = 0.0f;
#pragma unroll
    for (int c = 0; c < KV_FP8_CHUNKS; c++)
#pragma unroll
      for (int j = 0; j < KV_FP8_EPL; j++) amax = kv_max(amax, fabsf(x[k][c][j]));
#pragma unroll
    for (int o = KV_FP8_LPR / 2; o > 0; o >>= 1) amax = kv_max(amax, __shfl_xor_sync(0xffffffffu, amax, o));
#if KV_NAN_PAIR
    bool nan = false;
#pragma unroll
    for (int c = 0; c < KV_FP8_CHUNKS; c++)
#pragma unroll
      for (int j = 0; j < KV_FP8_EPL; j++) nan |= x[k][c][j] != x[k][c][j];
    const bool pair_nan = kv_pair_nan(nan);
#endif
    if (!put[k]) continue;
#if KV_NAN_PAIR
    if (pair_nan) {
#pragma unroll
      for (int c = 0; c < KV_FP8_CHUNKS; c++) {
        const int e = c * KV_FP8_SPAN + lane * KV_FP8_EPL;
        if (e < KV_HEAD_DIM) kv_put_same(pool + value[k] + e, 0x7fu);
      }
      if (lane == 0) kv_st4((unsigned*)(pool + scale[k]), 0x7fc00000u);
      continue;
    }
#endif
#if KV_ZERO_ROW_FAST
    if (amax == 0.0f) {
#pragma unroll
      for (int c = 0; c < KV_FP8_CHUNKS; c++) {
        const int e = c * KV_FP8_SPAN + lane * KV_FP8_EPL;
        if (e < KV_HEAD_DIM) kv_put_same(pool + value[k] + e, 0u);
      }
      if (lane == 0) kv_st4((unsigned*)(pool + scale[k]), __float_as_uint(kv_scale(0.0f)));
      continue;
    }
#endif
    const kv_divisor s = kv_divisor_of(kv_scale(amax));
#pragma unroll
    for (int c = 0; c < KV_FP8_CHUNKS; c++) {
      const int e = c * KV_FP8_SPAN + lane * KV_FP8_EPL;
      if (e < KV_HEAD_DIM) kv_put_codes(pool + value[k] + e, x[k][c], s);
    }
    if (lane == 0) kv_st4((unsigned*)(pool + scale[k]), __float_as_uint(s.s));
  }
}
#endif  // KV_FP8
