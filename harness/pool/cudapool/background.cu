// Kernels of the CUDA arena backend. They compute the arena background on the
// fly, so the baseline never needs a second copy of the arena in memory.
//
// A window filled from arena byte `origin` with `seed` holds, at arena byte
// origin+k, byte k%8 of window word k/8 = splitmix64(seed, k/8); this must
// match pool.FillBackground bit for bit. The background is relative to the
// window, so when origin is not a multiple of 8 every aligned arena word
// straddles two window words (window_word stitches them).
//
// Ranges need not be aligned: byte_mask selects the bytes of an arena word
// that lie inside [lo, hi). The arena allocation is rounded up to 256 bytes,
// so reading any whole word or 256-byte block that a range touches stays
// inside it.

typedef unsigned long long u64;
typedef long long i64;
typedef unsigned int u32;

__device__ __forceinline__ u64 background_word(u64 seed, u64 idx) {
	u64 z = seed + (idx + 1) * 0x9e3779b97f4a7c15ULL;
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

// window_word is the background of the 8 bytes of arena word a, for a window
// filled from arena byte origin. Callers only use bytes at or after origin
// (a*8 >= origin-7); bytes before origin come out as garbage to be masked.
__device__ __forceinline__ u64 window_word(u64 seed, u64 origin, u64 a) {
	i64 k = (i64)(a * 8) - (i64)origin; // window offset of the word's first byte
	i64 j = k >= 0 ? k / 8 : -1;         // window word holding that byte
	u32 s = (u32)(k - 8 * j);            // its byte within window word j
	u64 w0 = background_word(seed, (u64)j);
	if (s == 0) return w0;
	u64 w1 = background_word(seed, (u64)(j + 1));
	return (w0 >> (8 * s)) | (w1 << (64 - 8 * s));
}

// byte_mask has 0xff in each byte lane of arena word w whose byte is in [lo, hi).
__device__ __forceinline__ u64 byte_mask(u64 w, u64 lo, u64 hi) {
	u64 a = w * 8;
	if (lo >= a + 8 || hi <= a) return 0;
	u64 s = lo > a ? lo - a : 0;
	u64 e = hi < a + 8 ? hi - a : 8;
	u64 m = (e - s == 8) ? ~0ULL : ((1ULL << ((e - s) * 8)) - 1);
	return m << (s * 8);
}

// fill_background writes the background of the window filled from origin
// with seed over arena bytes [lo, hi) (origin <= lo), one arena word per
// thread in a grid-stride loop.
extern "C" __global__ void fill_background(unsigned char* arena, u64 lo, u64 hi, u64 seed, u64 origin) {
	u64 stride = (u64)gridDim.x * blockDim.x;
	for (u64 w = lo / 8 + (u64)blockIdx.x * blockDim.x + threadIdx.x; w * 8 < hi; w += stride) {
		u64 v = window_word(seed, origin, w);
		u64 m = byte_mask(w, lo, hi);
		if (m == ~0ULL) {
			*(u64*)(arena + w * 8) = v;
			continue;
		}
		for (int b = 0; b < 8; b++) {
			if ((m >> (8 * b)) & 0xff) arena[w * 8 + b] = (unsigned char)(v >> (8 * b));
		}
	}
}

// diff_background finds the 256-byte arena blocks that differ, inside
// [lo, hi), from the baseline: the background of the window filled from
// origin with seed when filled, else zero. A warp checks one block, a word
// per lane; lane 0 appends a differing block's index to list (when it fits
// in cap) and counts it in *count either way, so the host can grow the list
// and rescan.
extern "C" __global__ void diff_background(const u64* arena, u64 lo, u64 hi, u64 seed, u64 origin, u32 filled,
		u32* count, u32* list, u32 cap) {
	u32 lane = threadIdx.x & 31;
	u64 warp = ((u64)blockIdx.x * blockDim.x + threadIdx.x) >> 5;
	u64 warps = ((u64)gridDim.x * blockDim.x) >> 5;
	for (u64 b = lo / 256 + warp; b * 256 < hi; b += warps) {
		u64 w = b * 32 + lane;
		u64 m = byte_mask(w, lo, hi);
		u64 d = 0;
		if (m) {
			u64 want = filled ? window_word(seed, origin, w) : 0;
			d = (arena[w] ^ want) & m;
		}
		if (__any_sync(0xffffffffu, d != 0) && lane == 0) {
			u32 i = atomicAdd(count, 1u);
			if (i < cap) list[i] = (u32)b;
		}
	}
}

// gather_blocks copies the n 256-byte arena blocks named in list to out,
// back to back, 16 bytes per thread, so the host fetches them in one copy.
extern "C" __global__ void gather_blocks(const uint4* arena, const u32* list, u32 n, uint4* out) {
	u64 stride = (u64)gridDim.x * blockDim.x;
	for (u64 t = (u64)blockIdx.x * blockDim.x + threadIdx.x; t < (u64)n * 16; t += stride) {
		out[t] = arena[(u64)list[t / 16] * 16 + t % 16];
	}
}
