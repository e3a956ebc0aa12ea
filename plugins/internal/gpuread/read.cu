// read.cu: the bundled plugins' CUDA read kernel. One block per request:
// the block's warps score the request's tokens (one token per warp at a
// time, the dot product split over the lanes and summed by a butterfly of
// shuffles), and the block keeps its top k in shared memory, merging each
// chunk of new scores into it with a bitonic sort.
//
// Every candidate is one 64-bit key that sorts in result order: the high
// word maps the float32 score to an unsigned integer in score order (a NaN
// score to 0, below every number), the low word is the bitwise complement
// of the slot, so of two equal scores the lower slot sorts higher. Sorting
// keys in descending order therefore gives higher score first, then lower
// slot, exactly as the CPU kernel's comparison; the empty key 0 sorts
// below every token. Slots must be below 2^32 - 1 (the host checks).
//
// Macros (set by gpuread from the plugin's CPU geometry, never by hand):
//   KV_HEAD_DIM               elements per key, a multiple of 8
//   KV_FP8                    1: keys are e4m3 codes times a float32 scale; 0: bf16
//   KV_TOKENS_PER_PAGE        tokens per addressing page of the values (1 for rows)
//   KV_PAGE_BYTES             bytes per addressing page of the values
//   KV_VALUE_BYTES            bytes of one token's values inside its page
//   KV_SCALE_TOKENS_PER_PAGE  the same three for the scales, which follow
//   KV_SCALE_PAGE_BYTES       their page's values, 4 bytes each; a correct
//   KV_SCALE_VALUE_BYTES      kernel has the values' numbers here
//   KV_READ_WARPS             warps per block
//   KV_READ_RULE              0 correct; 1 unmasked tail; 2 scratch in slot 0; 3 denormals are zero;
//                             4 keys prescaled; 5 nan shared range
//   KV_READ_TILE              tokens per tile of the unmasked-tail mutant
//
// Mutant rules, as the plugins' CPU kernels make them:
//   0  (no variant)     tokens indptr[r] .. indptr[r+1]
//   1  unmasked-tail    the list rounded up to KV_READ_TILE tokens (and cut
//                       at the last token of the call): a short list reads
//                       the next request's tokens
//   2  writes-scratch   the request's top scores are left in slot 0's values
//   3  denormals-are-zero  subnormal query elements are flushed to zeros of
//                       their sign, as fast math does
//   4  keys-prescaled   each key element, dequantized (times its scale on
//                       fp8), is doubled before its product and the sum
//                       halved: exact until a key within a factor of 2 of
//                       float32's largest finite value overflows to infinity
//   5  nan-shared-range every block first scores every request's tokens
//                       for one range [lo, hi] of the whole call, by a min
//                       and max that a NaN operand makes NaN, and clamps
//                       each of its own scores into it: a no-op on finite
//                       scores, but one request's NaN score makes every
//                       request's scores NaN, ranked by slot

typedef long long kv_i64;
typedef unsigned long long kv_u64;

// kv_page splits a slot into its page and its token within the page, by
// floor division as a shift by the page bits does.
__device__ __forceinline__ void kv_page(kv_i64 slot, kv_i64 tokens, kv_i64* page, kv_i64* off) {
  *page = slot / tokens;
  *off = slot % tokens;
  if (*off < 0) {
    *page -= 1;
    *off += tokens;
  }
}

// kv_value_at is where slot's values are, from the pool base.
__device__ __forceinline__ kv_i64 kv_value_at(kv_i64 slot) {
  kv_i64 page, off;
  kv_page(slot, KV_TOKENS_PER_PAGE, &page, &off);
  return page * (kv_i64)KV_PAGE_BYTES + off * (kv_i64)KV_VALUE_BYTES;
}

// kv_scale_at is where slot's float32 scale is, from the pool base.
__device__ __forceinline__ kv_i64 kv_scale_at(kv_i64 slot) {
  kv_i64 page, off;
  kv_page(slot, KV_SCALE_TOKENS_PER_PAGE, &page, &off);
  return page * (kv_i64)KV_SCALE_PAGE_BYTES + (kv_i64)KV_SCALE_TOKENS_PER_PAGE * KV_SCALE_VALUE_BYTES + off * 4;
}

__device__ __forceinline__ float kv_bf16(unsigned bits) { return __uint_as_float(bits << 16); }

// kv_e4m3 decodes an e4m3 code by its definition: a normal code is a float32
// with the exponent rebiased (+120) and the three mantissa bits on top,
// a subnormal one m · 2^-9, exponent 15 with mantissa 7 a NaN.
__device__ __forceinline__ float kv_e4m3(unsigned c) {
  const unsigned sign = (c & 0x80u) << 24, e = (c >> 3) & 0xfu, m = c & 7u;
  if (e == 0xfu && m == 7u) return __uint_as_float(sign | 0x7fc00000u);
  if (e == 0u) return __uint_as_float(sign | __float_as_uint((float)m * 0.001953125f));
  return __uint_as_float(sign | ((e + 120u) << 23) | (m << 20));
}

// kv_score is q·k for slot's key, computed by one whole warp: lane l takes
// elements 4l..4l+3 of every 128 (one 8-byte bf16 or 4-byte e4m3 load, the
// warp's loads coalesced), then a butterfly of shuffles sums the lanes. The
// order of the additions depends on the lane only, never on where the
// token is in its list, so equal keys get bit-equal scores.
__device__ __forceinline__ float kv_score(const char* __restrict__ pool, const float* q, kv_i64 slot, int lane) {
  const char* key = pool + kv_value_at(slot);
  float acc = 0.0f;
#if KV_READ_RULE == 4
#if KV_FP8
  const float kv_pre = 2.0f * *(const float*)(pool + kv_scale_at(slot));
#else
  const float kv_pre = 2.0f;
#endif
#define KV_K(x) ((x) * kv_pre)
#else
#define KV_K(x) (x)
#endif
#pragma unroll 4
  for (int e = lane * 4; e < KV_HEAD_DIM; e += 128) {
#if KV_FP8
    const unsigned w = *(const unsigned*)(key + e);
    acc += q[e] * KV_K(kv_e4m3(w & 0xffu)) + q[e + 1] * KV_K(kv_e4m3((w >> 8) & 0xffu)) +
           q[e + 2] * KV_K(kv_e4m3((w >> 16) & 0xffu)) + q[e + 3] * KV_K(kv_e4m3(w >> 24));
#else
    const uint2 u = *(const uint2*)(key + 2 * e);
    acc += q[e] * KV_K(kv_bf16(u.x & 0xffffu)) + q[e + 1] * KV_K(kv_bf16(u.x >> 16)) +
           q[e + 2] * KV_K(kv_bf16(u.y & 0xffffu)) + q[e + 3] * KV_K(kv_bf16(u.y >> 16));
#endif
  }
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) acc += __shfl_xor_sync(0xffffffffu, acc, o);
#undef KV_K
#if KV_READ_RULE == 4
  acc *= 0.5f;
#elif KV_FP8
  acc *= *(const float*)(pool + kv_scale_at(slot));
#endif
  return acc;
}

#if KV_READ_RULE == 5
// kv_min_nan and kv_max_nan are min and max that a NaN operand makes NaN
// (IEEE 754-2019 minimum and maximum, torch.amin and amax), unlike fminf.
__device__ __forceinline__ float kv_min_nan(float a, float b) {
  return (a != a || b != b) ? __uint_as_float(0x7fc00000u) : fminf(a, b);
}
__device__ __forceinline__ float kv_max_nan(float a, float b) {
  return (a != a || b != b) ? __uint_as_float(0x7fc00000u) : fmaxf(a, b);
}

// kv_call_range is the nan-shared-range mutant's range of every score of
// the call: each request's query loaded into q in turn, its tokens scored
// a warp per token, the warps' ranges met through red (KV_READ_WARPS × 2
// floats of the block's buffer, before the buffer is used).
__device__ void kv_call_range(const char* __restrict__ pool, const unsigned short* __restrict__ queries,
                              const kv_i64* __restrict__ indptr, const kv_i64* __restrict__ tokens, int requests, float* q,
                              float* red, float* lo, float* hi) {
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  float l = __uint_as_float(0x7f800000u), h = __uint_as_float(0xff800000u);
  for (int r = 0; r < requests; ++r) {
    for (int e = threadIdx.x; e < KV_HEAD_DIM; e += blockDim.x) q[e] = kv_bf16(queries[(kv_i64)r * KV_HEAD_DIM + e]);
    __syncthreads();
    for (kv_i64 t = indptr[r] + warp; t < indptr[r + 1]; t += KV_READ_WARPS) {  // the same t for the whole warp
      const float s = kv_score(pool, q, tokens[t], lane);
      l = kv_min_nan(l, s);
      h = kv_max_nan(h, s);
    }
    __syncthreads();
  }
  if (lane == 0) {
    red[warp] = l;
    red[KV_READ_WARPS + warp] = h;
  }
  __syncthreads();
  for (int w = 0; w < KV_READ_WARPS; ++w) {
    l = kv_min_nan(l, red[w]);
    h = kv_max_nan(h, red[KV_READ_WARPS + w]);
  }
  __syncthreads();  // every thread has read red before the buffer is cleared
  *lo = l;
  *hi = h;
}
#endif

// kv_key packs a score and a slot into a key that sorts in result order.
// -0 becomes +0 first: equal scores must compare equal.
__device__ __forceinline__ kv_u64 kv_key(float s, kv_i64 slot) {
  unsigned hi = 0u;
  if (s == s) {
    if (s == 0.0f) s = 0.0f;
    const unsigned b = __float_as_uint(s);
    hi = (b & 0x80000000u) ? ~b : (b | 0x80000000u);
  }
  return ((kv_u64)hi << 32) | (kv_u64)(~(unsigned)slot);
}

__device__ __forceinline__ float kv_key_score(kv_u64 key) {
  const unsigned hi = (unsigned)(key >> 32);
  if (hi == 0u) return __uint_as_float(0x7fc00000u);
  return __uint_as_float((hi & 0x80000000u) ? (hi & 0x7fffffffu) : ~hi);
}

__device__ __forceinline__ kv_i64 kv_key_slot(kv_u64 key) { return (kv_i64)(~(unsigned)(key & 0xffffffffull)); }

// kv_sort_desc sorts n keys (a power of two) in descending order: a
// bitonic network, each thread taking pairs, the block synchronised after
// every stage.
__device__ __forceinline__ void kv_sort_desc(kv_u64* a, int n) {
  for (int size = 2; size <= n; size <<= 1) {
    for (int stride = size >> 1; stride > 0; stride >>= 1) {
      for (int i = threadIdx.x; i < (n >> 1); i += blockDim.x) {
        const int lo = 2 * i - (i & (stride - 1));
        const int hi = lo + stride;
        const bool desc = (lo & size) == 0;
        const kv_u64 x = a[lo], y = a[hi];
        if ((x < y) == desc) {
          a[lo] = y;
          a[hi] = x;
        }
      }
      __syncthreads();
    }
  }
}

// kvread: block r reads request r. The shared buffer of cap keys (a power
// of two above k) holds the best k so far in [0, k); each round scores the
// next cap - k tokens into [k, cap), empty keys past the list's end, and
// sorts the whole buffer. The out windows get the first min(k, n) keys
// and slot -1 with a NaN score after them.
extern "C" __global__ void __launch_bounds__(KV_READ_WARPS * 32)
    kvread(char* __restrict__ pool, const unsigned short* __restrict__ queries, const kv_i64* __restrict__ indptr,
           const kv_i64* __restrict__ tokens, kv_i64* __restrict__ out_slots, float* __restrict__ out_scores,
           int requests, int k, int cap) {
  __shared__ float q[KV_HEAD_DIM];
  extern __shared__ kv_u64 buf[];
  const int r = blockIdx.x;
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
#if KV_READ_RULE == 5
  float range_lo, range_hi;  // the bug: one range for the whole call
  kv_call_range(pool, queries, indptr, tokens, requests, q, (float*)buf, &range_lo, &range_hi);
#endif
  for (int e = threadIdx.x; e < KV_HEAD_DIM; e += blockDim.x) {
    q[e] = kv_bf16(queries[(kv_i64)r * KV_HEAD_DIM + e]);
#if KV_READ_RULE == 3
    if (fabsf(q[e]) < 1.17549435e-38f) q[e] = copysignf(0.0f, q[e]);  // the bug: fast math flushes subnormals
#endif
  }
  for (int i = threadIdx.x; i < cap; i += blockDim.x) buf[i] = 0ull;
  const kv_i64 lo = indptr[r];
  kv_i64 hi = indptr[r + 1];
#if KV_READ_RULE == 1
  hi = lo + (hi - lo + KV_READ_TILE - 1) / KV_READ_TILE * KV_READ_TILE;
  if (hi > indptr[requests]) hi = indptr[requests];
#endif
  __syncthreads();
  const int chunk = cap - k;
  for (kv_i64 c0 = lo; c0 < hi; c0 += chunk) {
    for (int j = warp; j < chunk; j += KV_READ_WARPS) {
      const kv_i64 t = c0 + j;
      kv_u64 key = 0ull;
      if (t < hi) {  // the same for the whole warp: the shuffles see every lane
        const kv_i64 slot = tokens[t];
        float s = kv_score(pool, q, slot, lane);
#if KV_READ_RULE == 5
        s = kv_min_nan(kv_max_nan(s, range_lo), range_hi);
#endif
        key = kv_key(s, slot);
      }
      if (lane == 0) buf[k + j] = key;
    }
    __syncthreads();
    kv_sort_desc(buf, cap);
  }
  const kv_i64 n = hi - lo;
  for (int i = threadIdx.x; i < k; i += blockDim.x) {
    const kv_i64 at = (kv_i64)r * k + i;
    out_slots[at] = i < n ? kv_key_slot(buf[i]) : -1;
    out_scores[at] = i < n ? kv_key_score(buf[i]) : __uint_as_float(0x7fc00000u);
  }
#if KV_READ_RULE == 2
  float* sink = (float*)(pool + kv_value_at(0));
  for (int i = threadIdx.x; i < k && i < n && i < KV_VALUE_BYTES / 4; i += blockDim.x) sink[i] = kv_key_score(buf[i]);
#endif
}
