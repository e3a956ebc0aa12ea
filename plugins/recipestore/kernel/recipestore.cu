// recipestore.cu: the recipestore kernel. One thread quantizes one row:
// for each scale group its max |x|, its scale and its codes, then the
// row's bf16 tail (dsv4-main's rope). Simple on purpose: it is a kernel
// whose arithmetic the harness judges, not one to time.
//
// Macros (set by device.go from the CPU kernel's place and arith):
//   RS_HEAD_DIM, RS_GROUPS, RS_GROUP, RS_ROPE     the row: groups of codes, then bf16
//   RS_TOKENS, RS_PAGE_BYTES, RS_VALUE_STRIDE,
//   RS_SCALE_OFF, RS_SCALE_STRIDE                 the place of a token (see place.go)
//   RS_UE8M0        1: scales are ue8m0 exponent bytes; 0: float32
//   RS_EPS          the floor, a float literal
//   RS_TORCH        1: scale = max(amax, eps) * (1/448), codes x / s
//   RS_RECIP        1: codes x * (1/s)
//   RS_ROUND        0: nearest even (the hardware), 1: half away from zero, 2: through bf16
//   RS_PARTIAL      1: max |x| over the first half of each group
//   RS_EXP_DOWN     1: ue8m0 exponent rounded down
//   RS_SLOT32       1: loc holds int32 slots
#include <cuda_fp8.h>

typedef long long rs_i64;
#if RS_SLOT32
typedef int rs_slot;
#else
typedef long long rs_slot;
#endif

__device__ __forceinline__ float rs_bf16(unsigned short b) { return __uint_as_float(((unsigned)b) << 16); }

// rs_bf16_round rounds to the nearest bf16, ties to even; a NaN stays NaN.
__device__ __forceinline__ float rs_bf16_round(float f) {
  if (f != f) return f;
  unsigned u = __float_as_uint(f);
  u += 0x7fffu + ((u >> 16) & 1u);
  return __uint_as_float(u & 0xffff0000u);
}

// rs_ties_away converts as roundf rounds: half away from zero, saturating.
__device__ unsigned rs_ties_away(float y) {
  if (y != y) return 0x7fu;
  const unsigned sign = (__float_as_uint(y) >> 24) & 0x80u;
  const float a = fabsf(y);
  if (a >= 448.0f) return sign | 0x7eu;
  if (a < 0.015625f) return sign | (unsigned)roundf(a * 512.0f);  // below 2^-6: m * 2^-9
  int e;
  const float frac = frexpf(a, &e);  // a = frac * 2^e, frac in [0.5, 1)
  int m = (int)roundf(frac * 16.0f);
  if (m == 16) {
    m = 8;
    e++;
  }
  const int biased = e - 1 + 7;
  if (biased > 15 || (biased == 15 && m - 8 == 7)) return sign | 0x7eu;
  return sign | ((unsigned)biased << 3) | (unsigned)(m - 8);
}

__device__ __forceinline__ unsigned rs_rne(float y) {
  if (y != y) return 0x7fu;
  return (unsigned)__nv_cvt_float_to_fp8(y, __NV_SATFINITE, __NV_E4M3);
}

// rs_exponent is the ue8m0 exponent of s from its bits: its float32
// exponent, plus one when a mantissa bit is set, within the normal range.
__device__ __forceinline__ int rs_exponent(float s) {
  const unsigned u = __float_as_uint(s);
  int e = (int)((u >> 23) & 0xffu) - 127;
#if !RS_EXP_DOWN
  if (u & 0x7fffffu) e++;
#endif
  return e < -126 ? -126 : (e > 127 ? 127 : e);
}

__device__ __forceinline__ float rs_scale(float amax) {
  const float floored = fmaxf(amax, RS_EPS);
#if RS_TORCH
  float s = floored * (1.0f / 448.0f);
#else
  float s = floored / 448.0f;
#endif
#if RS_UE8M0
  s = __uint_as_float((unsigned)(rs_exponent(s) + 127) << 23);
#endif
  return s;
}

__device__ __forceinline__ unsigned rs_code(float x, float s) {
  float y;
#if RS_ROUND == 2
  y = rs_bf16_round(x * rs_bf16_round(1.0f / s));
#elif RS_RECIP && !RS_TORCH
  const float r = 1.0f / s;
  y = x * r;
#else
  y = x / s;
#endif
#if RS_ROUND == 1
  return rs_ties_away(y);
#else
  return rs_rne(y);
#endif
}

extern "C" __global__ void recipestore_store(char* pool, const unsigned short* rows, const rs_slot* loc,
                                             const int* valid, int capacity, rs_i64 slots) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= capacity || i >= *valid) return;  // told n: padded rows are never touched
  const rs_i64 slot = (rs_i64)loc[i];
  rs_i64 page = slot / RS_TOKENS, off = slot % RS_TOKENS;
  if (off < 0) {
    page -= 1;
    off += RS_TOKENS;
  }
  unsigned char* value = (unsigned char*)pool + page * RS_PAGE_BYTES + off * RS_VALUE_STRIDE;
  unsigned char* scale = (unsigned char*)pool + page * RS_PAGE_BYTES + RS_SCALE_OFF + off * RS_SCALE_STRIDE;
  const unsigned short* x = rows + (rs_i64)i * RS_HEAD_DIM;
  for (int g = 0; g < RS_GROUPS; g++) {
    float amax = 0.0f;
#if RS_PARTIAL
    const int span = RS_GROUP / 2;
#else
    const int span = RS_GROUP;
#endif
    for (int j = 0; j < span; j++) {
      const float a = fabsf(rs_bf16(x[g * RS_GROUP + j]));
      if (a > amax) amax = a;  // a NaN compares false: ignored
    }
    const float s = rs_scale(amax);
#if RS_UE8M0
    scale[g] = (unsigned char)((__float_as_uint(s) >> 23) & 0xffu);
#else
    ((unsigned*)scale)[g] = __float_as_uint(s);
#endif
    for (int j = 0; j < RS_GROUP; j++) value[g * RS_GROUP + j] = (unsigned char)rs_code(rs_bf16(x[g * RS_GROUP + j]), s);
  }
  unsigned short* rope = (unsigned short*)(value + RS_GROUPS * RS_GROUP);
  for (int j = 0; j < RS_ROPE; j++) rope[j] = x[RS_GROUPS * RS_GROUP + j];
}
