// The sequence kind's page digests on the device: one 64-bit digest per
// listed page, so that the per-step ownership check moves 8 bytes a page
// to the host, and a page's bytes only when its digest differs from the
// shadow's. It must match pageDigest (digest.go) bit for bit: the sum,
// wrapping, over the page's 8-byte little-endian words w_i of
// mix(w_i ^ i * 0x9e3779b97f4a7c15), mix being splitmix64's finalizer.

typedef unsigned long long u64;
typedef unsigned int u32;

#define THREADS 256

__device__ __forceinline__ u64 mix(u64 x) {
	x += 0x9e3779b97f4a7c15ULL;
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
	x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
	return x ^ (x >> 31);
}

// page_digests: block b digests pages b, b + gridDim.x, ...: page p is the
// `words` 8-byte words at arena + offs[p]; its digest goes to out[p].
extern "C" __global__ void page_digests(const unsigned char *arena, const u64 *offs, u32 n, u32 words, u64 *out) {
	__shared__ u64 part[THREADS];
	for (u32 p = blockIdx.x; p < n; p += gridDim.x) {
		const u64 *page = (const u64 *)(arena + offs[p]);
		u64 h = 0;
		for (u32 i = threadIdx.x; i < words; i += blockDim.x) {
			h += mix(page[i] ^ ((u64)i * 0x9e3779b97f4a7c15ULL));
		}
		part[threadIdx.x] = h;
		__syncthreads();
		for (u32 s = blockDim.x / 2; s > 0; s >>= 1) {
			if (threadIdx.x < s) part[threadIdx.x] += part[threadIdx.x + s];
			__syncthreads();
		}
		if (threadIdx.x == 0) out[p] = part[0];
		__syncthreads();
	}
}
