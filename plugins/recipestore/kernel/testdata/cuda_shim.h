// cuda_shim.h: just enough of CUDA for g++ to compile recipestore.cu as
// C++ and run it on the CPU, one emulated thread at a time, so that the
// CPU machine checks the CUDA kernel's logic against the Go kernel. The
// conversion to e4m3 stands in for the hardware's cvt (nearest even,
// saturating), written here as bit manipulation.
#include <math.h>
#include <stdint.h>
#include <string.h>

#define __global__
#define __device__
#define __forceinline__ inline

struct rs_dim3 {
  unsigned x, y, z;
};
static rs_dim3 blockIdx, blockDim, threadIdx;

static inline unsigned __float_as_uint(float f) {
  unsigned u;
  memcpy(&u, &f, 4);
  return u;
}
static inline float __uint_as_float(unsigned u) {
  float f;
  memcpy(&f, &u, 4);
  return f;
}

typedef unsigned char __nv_fp8_storage_t;
enum __nv_saturation_t { __NV_NOSAT, __NV_SATFINITE };
enum __nv_fp8_interpretation_t { __NV_E4M3, __NV_E5M2 };

static inline __nv_fp8_storage_t __nv_cvt_float_to_fp8(float x, __nv_saturation_t, __nv_fp8_interpretation_t) {
  unsigned u = __float_as_uint(x);
  const unsigned sign = (u >> 24) & 0x80u;
  u &= 0x7fffffffu;
  if (u > 0x7f800000u) return 0x7f;
  if (u >= 0x43e00000u) return sign | 0x7e;  // 448 and above
  const int exp = (int)(u >> 23) - 127;
  if (exp < -6) {  // subnormal: m * 2^-9, m rounded to nearest even
    const double f = (double)__uint_as_float(u) * 512.0;
    double m = floor(f);
    const double rem = f - m;
    if (rem > 0.5 || (rem == 0.5 && fmod(m, 2.0) == 1.0)) m += 1.0;
    return sign | (unsigned char)m;
  }
  unsigned keep = (u >> 20) & 7u, rem = u & 0xfffffu;
  int e = exp + 7;
  if (rem > 0x80000u || (rem == 0x80000u && (keep & 1u))) {
    keep++;
    if (keep == 8) {
      keep = 0;
      e++;
    }
  }
  if (e > 15 || (e == 15 && keep == 7)) return sign | 0x7e;
  return sign | (unsigned char)(e << 3) | (unsigned char)keep;
}
