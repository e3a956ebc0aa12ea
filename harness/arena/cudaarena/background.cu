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

// store_word writes v over the bytes of arena word w that m selects: the
// whole word at once when m selects all of it, else byte by byte, so that
// ranges sharing a word never write each other's bytes.
__device__ __forceinline__ void store_word(unsigned char* arena, u64 w, u64 v, u64 m) {
	if (m == ~0ULL) {
		*(u64*)(arena + w * 8) = v;
		return;
	}
	for (int b = 0; b < 8; b++) {
		if ((m >> (8 * b)) & 0xff) arena[w * 8 + b] = (unsigned char)(v >> (8 * b));
	}
}

// fill_background writes the background of the window filled from origin
// with seed over arena bytes [lo, hi) (origin <= lo), one arena word per
// thread in a grid-stride loop.
extern "C" __global__ void fill_background(unsigned char* arena, u64 lo, u64 hi, u64 seed, u64 origin) {
	u64 stride = (u64)gridDim.x * blockDim.x;
	for (u64 w = lo / 8 + (u64)blockIdx.x * blockDim.x + threadIdx.x; w * 8 < hi; w += stride) {
		store_word(arena, w, window_word(seed, origin, w), byte_mask(w, lo, hi));
	}
}

// piece is a stretch of arena with one baseline, as cudapool's piece: the
// background of seed for the window filled from origin, or zeros.
struct piece {
	u64 lo, hi, seed, origin, filled;
};

// restore_pieces gives each of n small pieces its baseline back, a block
// per piece: one launch restores every range a run changed, however many.
extern "C" __global__ void restore_pieces(unsigned char* arena, const piece* list, u32 n) {
	for (u32 i = blockIdx.x; i < n; i += gridDim.x) {
		piece p = list[i];
		for (u64 w = p.lo / 8 + threadIdx.x; w * 8 < p.hi; w += blockDim.x) {
			u64 v = p.filled ? window_word(p.seed, p.origin, w) : 0;
			store_word(arena, w, v, byte_mask(w, p.lo, p.hi));
		}
	}
}

// A packed entry is what a scan reports of one changed block: its 256
// bytes, a bit per byte saying which of them differ from the baseline
// (bit j of the 16-bit word at 256 + 2*l is byte 16*l + j), and the block's
// index at 288; ENTRY_BYTES apart. cudapool's entryBytes must match.
#define ENTRY_BYTES 304

// byte_bits has bit j set where byte j of x0, or (bit j + 8) of x1, is not zero.
__device__ __forceinline__ u32 byte_bits(u64 x0, u64 x1) {
	u32 bits = 0;
	for (int j = 0; j < 8; j++) {
		bits |= (u32)(((x0 >> (8 * j)) & 0xff) != 0) << j;
		bits |= (u32)(((x1 >> (8 * j)) & 0xff) != 0) << (j + 8);
	}
	return bits;
}

// report_block records a block that a half-warp found changed (mine): its
// index in list, and its entry in packed, at a slot taken from *count by
// the half-warp's first lane. v is the lane's 16 bytes of the block and
// bits their byte_bits, lane & 15 their place. Every lane must call it.
__device__ __forceinline__ void report_block(bool mine, u64 b, uint4 v, u32 bits, u32* count, u32* list, u32 cap,
		unsigned char* packed, u32 packed_cap) {
	u32 lane = threadIdx.x & 31;
	u32 l = lane & 15;
	u32 i = 0;
	if (mine && l == 0) i = atomicAdd(count, 1u);
	i = __shfl_sync(0xffffffffu, i, lane & 16);
	if (!mine) return;
	if (l == 0 && i < cap) list[i] = (u32)b;
	if (i >= packed_cap) return;
	unsigned char* e = packed + (u64)i * ENTRY_BYTES;
	((uint4*)e)[l] = v;
	((unsigned short*)(e + 256))[l] = (unsigned short)bits;
	if (l == 0) *(u32*)(e + 288) = (u32)b;
}

// lane_word is word k (0 or 1) of a lane's 16 bytes.
__device__ __forceinline__ u64 lane_word(uint4 v, int k) {
	return k == 0 ? ((u64)v.x | ((u64)v.y << 32)) : ((u64)v.z | ((u64)v.w << 32));
}

// diff_pair is one warp's step of a scan of piece p: blocks b2 and b2+1
// (the latter when below last), a half-warp each. Every lane must call it.
__device__ __forceinline__ void diff_pair(const uint4* arena, piece p, u64 b2, u64 last,
		u32* count, u32* list, u32 cap, unsigned char* packed, u32 packed_cap) {
	u32 lane = threadIdx.x & 31;
	u64 b = b2 + (lane >> 4);
	u64 x[2] = {0, 0};
	uint4 v = make_uint4(0, 0, 0, 0);
	if (b < last) {
		v = arena[b * 16 + (lane & 15)];
		u64 w = b * 32 + (lane & 15) * 2;
		for (int k = 0; k < 2; k++) {
			u64 m = byte_mask(w + k, p.lo, p.hi);
			u64 want = (m && p.filled) ? window_word(p.seed, p.origin, w + k) : 0;
			x[k] = (lane_word(v, k) ^ want) & m;
		}
	}
	bool d = (x[0] | x[1]) != 0;
	u32 bal = __ballot_sync(0xffffffffu, d);
	report_block(((lane < 16) ? (bal & 0xffffu) : (bal >> 16)) != 0, b, v, d ? byte_bits(x[0], x[1]) : 0,
		count, list, cap, packed, packed_cap);
}

// diff_background finds the 256-byte arena blocks that differ, inside
// [lo, hi), from the baseline: the background of the window filled from
// origin with seed when filled, else zero. It takes any range; diff_blocks
// below is the fast path for whole blocks. A half-warp checks one block,
// 16 bytes per lane; a changed block is reported (report_block) whether or
// not the list has room, and *count counts it either way, so the host can
// grow the list and rescan.
extern "C" __global__ void diff_background(const uint4* arena, u64 lo, u64 hi, u64 seed, u64 origin, u32 filled,
		u32* count, u32* list, u32 cap, unsigned char* packed, u32 packed_cap) {
	u64 warp = ((u64)blockIdx.x * blockDim.x + threadIdx.x) >> 5;
	u64 warps = ((u64)gridDim.x * blockDim.x) >> 5;
	piece p = {lo, hi, seed, origin, filled};
	u64 last = (hi + 255) / 256;
	for (u64 b2 = lo / 256 + 2 * warp; b2 < last; b2 += 2 * warps) {
		diff_pair(arena, p, b2, last, count, list, cap, packed, packed_cap);
	}
}

// diff_pieces is diff_background over a list of n pieces, a CUDA block per
// piece in turn and the block's warps across the piece: a scan of the many
// small windows a case's rows point at, in one launch. Blocks that two
// pieces share are reported by each, with the bits of its own bytes.
extern "C" __global__ void diff_pieces(const uint4* arena, const piece* ps, u32 n,
		u32* count, u32* list, u32 cap, unsigned char* packed, u32 packed_cap) {
	u64 warp = threadIdx.x >> 5, warps = blockDim.x >> 5;
	for (u32 i = blockIdx.x; i < n; i += gridDim.x) {
		piece p = ps[i];
		u64 last = (p.hi + 255) / 256;
		for (u64 b2 = p.lo / 256 + 2 * warp; b2 < last; b2 += 2 * warps) {
			diff_pair(arena, p, b2, last, count, list, cap, packed, packed_cap);
		}
	}
}

// diff_blocks is diff_background for whole blocks [b0, b1) of a piece
// whose window starts on a word (origin = 8 * word0): no byte masks and no
// stitching of window words. A warp takes eight blocks at a time, with all
// four of each lane's loads in flight before it compares, so that the scan
// runs at memory speed.
extern "C" __global__ void diff_blocks(const uint4* arena, u64 b0, u64 b1, u64 seed, u64 word0, u32 filled,
		u32* count, u32* list, u32 cap, unsigned char* packed, u32 packed_cap) {
	u32 lane = threadIdx.x & 31;
	u64 warp = ((u64)blockIdx.x * blockDim.x + threadIdx.x) >> 5;
	u64 warps = ((u64)gridDim.x * blockDim.x) >> 5;
	for (u64 g = b0 + 8 * warp; g < b1; g += 8 * warps) {
		uint4 v[4];
#pragma unroll
		for (int r = 0; r < 4; r++) {
			u64 b = g + 2 * r + (lane >> 4);
			v[r] = b < b1 ? arena[b * 16 + (lane & 15)] : make_uint4(0, 0, 0, 0);
		}
#pragma unroll
		for (int r = 0; r < 4; r++) {
			u64 b = g + 2 * r + (lane >> 4);
			u64 x0 = 0, x1 = 0;
			if (b < b1) {
				u64 w = b * 32 + (lane & 15) * 2 - word0;
				x0 = lane_word(v[r], 0) ^ (filled ? background_word(seed, w) : 0);
				x1 = lane_word(v[r], 1) ^ (filled ? background_word(seed, w + 1) : 0);
			}
			bool d = (x0 | x1) != 0;
			u32 bal = __ballot_sync(0xffffffffu, d);
			report_block(((lane < 16) ? (bal & 0xffffu) : (bal >> 16)) != 0, b, v[r], d ? byte_bits(x0, x1) : 0,
				count, list, cap, packed, packed_cap);
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
