package gpustore

import (
	"encoding/binary"
	"math"
	"testing"
	"unsafe"

	"github.com/kvharness/kvharness/harness/cuda"
	"github.com/kvharness/kvharness/harness/cuda/cudatest"
	"github.com/kvharness/kvharness/plugins/internal/cpustore"
)

// openDevice opens GPU 0, or skips the test on a machine without CUDA.
func openDevice(t testing.TB) *cuda.Device { return cudatest.Device(t) }

func alloc(t testing.TB, d *cuda.Device, n int) cuda.Ptr {
	t.Helper()
	p, err := d.Alloc(n)
	must(t, err)
	t.Cleanup(func() { d.Free(p) })
	return p
}

// divCheckSource checks kv_quotients and kv_e4m3x2 against the plain IEEE
// division and the single conversion, for one scale per block: every
// scale a bf16 row can have (amax is a bf16 magnitude, infinity
// included) and every bf16 x that row can hold (|x| <= amax, or NaN).
const divCheckSource = `
extern "C" __global__ void kv_divcheck(unsigned long long* out, int floor) {
  const unsigned abits = blockIdx.x;
  const float amax = kv_bf16(abits);
  const float s = floor ? fmaxf(1e-4f, amax) / 448.0f : amax / 448.0f;
  const kv_divisor d = kv_divisor_of(s);
  unsigned long long checked = 0, qbad = 0, cbad = 0, pbad = 0;
  for (unsigned xb = threadIdx.x; xb < 65536u; xb += blockDim.x) {
    const float x = kv_bf16(xb);
    if (x == x && fabsf(x) > amax) continue;
    checked++;
    const float want = x / s;
    float xs[KV_FP8_EPL], qs[KV_FP8_EPL];
    for (int j = 0; j < KV_FP8_EPL; j++) xs[j] = x;
    kv_quotients(xs, d, qs);
    const float got = qs[0];
    if (!(want != want && got != got) && __float_as_uint(want) != __float_as_uint(got)) {
      qbad++;
      atomicCAS(&out[4], 0ull, (1ull << 63) | ((unsigned long long)xb << 16) | abits);
    }
    if (kv_e4m3(want) != kv_e4m3(got)) cbad++;
    const float other = kv_bf16(xb ^ 0x8001u) / s;
    const unsigned pair = kv_e4m3x2(want, other);
    if ((pair & 0xffu) != kv_e4m3(want) || (pair >> 8) != kv_e4m3(other)) pbad++;
  }
  atomicAdd(&out[0], checked);
  atomicAdd(&out[1], qbad);
  atomicAdd(&out[2], cbad);
  atomicAdd(&out[3], pbad);
}

// kv_cvtnan: what the hardware conversion makes of NaNs, before kv_e4m3
// maps every NaN to 0x7f.
extern "C" __global__ void kv_cvtnan(unsigned long long* out) {
  const unsigned nans[4] = {0x7fc00000u, 0xffc00000u, 0x7f800001u, 0xff800001u};
  unsigned long long r = 0;
  for (int i = 0; i < 4; i++) {
    const float x = __uint_as_float(nans[i]);
    r |= (unsigned long long)__nv_cvt_float_to_fp8(x, __NV_SATFINITE, __NV_E4M3) << (8 * i);
    r |= (unsigned long long)(__nv_cvt_float2_to_fp8x2(make_float2(x, 1.0f), __NV_SATFINITE, __NV_E4M3) & 0xffu) << (32 + 8 * i);
  }
  out[5] = r;
}
`

// TestDivisionExhaustive: the reciprocal-and-correction forms of x / s
// (KV_FP8_DIV 1 and 2) give the IEEE quotient bit for bit, and the paired
// conversion the single one's codes, over every x and every scale a bf16
// row can produce, with and without the scale floor. The default tuning's
// form must be exact; the other is reported.
func TestDivisionExhaustive(t *testing.T) {
	d := openDevice(t)
	out := alloc(t, d, 64)
	for _, div := range []int{1, 2} {
		s := fp8Spec(128, 64)
		s.Name, s.Source, s.Entry = "divcheck", divCheckSource, "kv_divcheck"
		s.Tune = &Tuning{BlockThreads: 256, RowsPerThread: 1, FP8Lanes: 8, FP8Elems: 8, FP8Div: div, FP8Pair: true}
		var k Kernels
		f, err := k.Function(d, s)
		must(t, err)
		for _, floor := range []int32{1, 0} {
			must(t, d.Memset8(out, 0, 64))
			must(t, f.Launch(nil, cuda.Dim3{X: 0x7f81}, cuda.Dim3{X: 256}, 0, out, floor))
			must(t, d.Sync())
			var r [6]uint64
			buf := make([]byte, 48)
			must(t, d.DtoH(buf, out))
			for i := range r {
				r[i] = binary.LittleEndian.Uint64(buf[8*i:])
			}
			t.Logf("KV_FP8_DIV=%d floor=%d: %d (x, scale) pairs, %d quotients differ from x / s, %d codes differ, %d paired conversions differ",
				div, floor, r[0], r[1], r[2], r[3])
			if r[1] != 0 {
				xb, ab := uint16(r[4]>>16), uint16(r[4])
				t.Logf("  first: x = %#04x (%g), amax = %#04x (%g)", xb, bf16f(xb), ab, bf16f(ab))
			}
			if r[0] < 1<<29 {
				t.Errorf("only %d pairs checked", r[0])
			}
			if r[3] != 0 {
				t.Errorf("the paired e4m3 conversion differs from the single one in %d cases", r[3])
			}
			if ts, _ := tuningsOf(FP8); (div == ts.Small.FP8Div || div == ts.Large.FP8Div) && (r[1] != 0 || r[2] != 0) {
				t.Errorf("the division of the tuning in use (KV_FP8_DIV=%d) is not x / s", div)
			}
		}
		if div == 1 {
			g, err := k.Function(d, Spec{Name: s.Name, Source: s.Source, Entry: "kv_cvtnan", Kind: FP8, HeadDim: 128, PageSize: 64,
				Geometry: s.Geometry, Tune: s.Tune})
			must(t, err)
			must(t, g.Launch(nil, cuda.Dim3{X: 1}, cuda.Dim3{X: 1}, 0, out))
			buf := make([]byte, 48)
			must(t, d.DtoH(buf, out))
			t.Logf("hardware e4m3 of NaNs 7fc00000 ffc00000 7f800001 ff800001: single % x, paired % x (kv_e4m3 maps all to 0x7f)",
				buf[40:44], buf[44:48])
		}
	}
}

func bf16f(b uint16) float32 { return math.Float32frombits(uint32(b) << 16) }

// benchRuleSource is fusedstore's correct kernel (FUSED_RULE 0): rows
// 0..n-1, for timing tunings without the plugin.
const benchRuleSource = `
struct BenchRule {
  __device__ static bool store(int i, int n, kv_i64 loc, kv_i64 slots, kv_i64* slot) {
    *slot = loc;
    return i < n;
  }
};
#if KV_FP8
extern "C" __global__ void __launch_bounds__(KV_BLOCK_THREADS)
    bench_fp8(char* pool, const unsigned short* rows, const kv_i64* loc, const int* valid, int capacity, kv_i64 slots) {
  kv_fp8_store<BenchRule>(pool, rows, loc, valid, capacity, slots);
}
#else
extern "C" __global__ void __launch_bounds__(KV_BLOCK_THREADS)
    bench_bf16(char* pool, const uint4* rows, const kv_i64* loc, const int* valid, int capacity, kv_i64 slots) {
  kv_bf16_store<BenchRule>(pool, rows, loc, valid, capacity, slots);
}
#endif
`

// auxSource is what the variant bench needs besides the stores: a
// comparison of two buffers and the probes. The SDK's hold kernel
// (sdk.HoldSource), which keeps the stream busy while a batch is queued
// behind it, is compiled with it.
const auxSource = `
extern "C" __global__ void aux_cmp(const uint4* a, const uint4* b, unsigned long long n16, unsigned long long* bad) {
  unsigned long long local = 0;
  for (unsigned long long i = blockIdx.x * (unsigned long long)blockDim.x + threadIdx.x; i < n16;
       i += (unsigned long long)gridDim.x * blockDim.x) {
    const uint4 x = a[i], y = b[i];
    local += (x.x != y.x) + (x.y != y.y) + (x.z != y.z) + (x.w != y.w);
  }
  if (local) atomicAdd(bad, local);
}
// Floor probes (TestKernelVariants): what the memory system charges for
// each half of a bf16 store. aux_scatter writes a constant 256-byte row to
// each slot (reads only the slots); aux_gather reads the rows and slots
// and writes nothing (the sink only when the data is impossible).
extern "C" __global__ void aux_scatter(char* pool, const long long* loc, int n) {
  const int i = blockIdx.x * (blockDim.x / 16) + threadIdx.x / 16;
  if (i >= n) return;
  const uint4 v = make_uint4(i, i, i, i);
  reinterpret_cast<uint4*>(pool + loc[i] * 256)[threadIdx.x % 16] = v;
}
extern "C" __global__ void aux_scatter_ef(char* pool, const long long* loc, int n) {
  const int i = blockIdx.x * (blockDim.x / 16) + threadIdx.x / 16;
  if (i >= n) return;
  unsigned long long p;
  asm("createpolicy.fractional.L2::evict_first.b64 %0, 1.0;" : "=l"(p));
  uint4* dst = reinterpret_cast<uint4*>(pool + loc[i] * 256) + threadIdx.x % 16;
  asm volatile("st.global.L1::no_allocate.L2::cache_hint.v4.u32 [%0], {%1, %1, %1, %1}, %2;" ::"l"(dst), "r"(i), "l"(p)
               : "memory");
}
extern "C" __global__ void aux_gather(const uint4* rows, const long long* loc, int n, unsigned* sink) {
  const int i = blockIdx.x * (blockDim.x / 16) + threadIdx.x / 16;
  if (i >= n) return;
  const uint4 v = __ldg(rows + (long long)i * 16 + threadIdx.x % 16);
  if ((v.x ^ v.y ^ v.z ^ v.w ^ (unsigned)__ldg(loc + i)) == 0x9e3779b9u) atomicAdd(sink, 1u);
}
// aux_bulk stores 64 rows per 256-thread block through the tensor memory
// accelerator: the block loads its rows into shared memory, then one
// thread per row hands a 256-byte bulk copy to the slot (sm_90).
extern "C" __global__ void __launch_bounds__(256) aux_bulk(char* pool, const uint4* rows, const long long* loc, int n) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  __shared__ __align__(128) uint4 tile[64 * 16];
  const long long first = (long long)blockIdx.x * 64;
  const int m = min(64, n - (int)first);
  for (int k = threadIdx.x; k < m * 16; k += 256) tile[k] = __ldg(rows + first * 16 + k);
  asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
  __syncthreads();
  if (threadIdx.x < m) {
    const unsigned src = (unsigned)__cvta_generic_to_shared(tile + threadIdx.x * 16);
    char* dst = pool + __ldg(loc + first + threadIdx.x) * 256;
    asm volatile("cp.async.bulk.global.shared::cta.bulk_group [%0], [%1], 256;" ::"l"(dst), "r"(src) : "memory");
    asm volatile("cp.async.bulk.commit_group;" ::: "memory");
    asm volatile("cp.async.bulk.wait_group.read 0;" ::: "memory");
  }
#endif
}
`

// benchLayout is the variant bench's device buffer: a bf16 pool and an
// fp8-paged pool of benchSlots slots (128-element rows, 64-token pages),
// then two sets of benchTokens staged rows (gaussian, as serving data; and
// mixed, with NaN, infinities, zeros and tiny values), their slots (in a
// random order, and sorted; and for the bf16 diagnosis, the first
// benchTokens slots in a random order, and in order, and whole 64-slot
// pages in a random order) and the valid count.
type benchLayout struct {
	bf16Pool, fp8Pool, rows, rowsMixed, loc, locSorted, locDense, locIdentity, locPages, valid, size int
}

const (
	benchSlots  = 1 << 20
	benchTokens = 262144
	benchDim    = 128
	benchPage   = 64
)

var benchFP8Geometry = cpustore.Paged{P: benchPage, ValueBytes: benchDim, ScaleBytes: 4, PageBytes: (benchDim + 4) * benchPage}

func newBenchLayout() benchLayout {
	up := func(n int) int { return (n + 255) &^ 255 }
	var l benchLayout
	l.fp8Pool = up(benchSlots * 2 * benchDim)
	l.rows = l.fp8Pool + up(benchSlots/benchPage*benchFP8Geometry.PageBytes)
	l.rowsMixed = l.rows + up(benchTokens*2*benchDim)
	l.loc = l.rowsMixed + up(benchTokens*2*benchDim)
	l.locSorted = l.loc + up(8*benchTokens)
	l.locDense = l.locSorted + up(8*benchTokens)
	l.locIdentity = l.locDense + up(8*benchTokens)
	l.locPages = l.locIdentity + up(8*benchTokens)
	l.valid = l.locPages + up(8*benchTokens)
	l.size = l.valid + 256
	return l
}

func (l benchLayout) bf16Bytes() int { return l.fp8Pool }
func (l benchLayout) fp8Bytes() int  { return benchSlots / benchPage * benchFP8Geometry.PageBytes }

func bytesOf[T any](s []T) []byte {
	if len(s) == 0 {
		return nil
	}
	return unsafe.Slice((*byte)(unsafe.Pointer(&s[0])), len(s)*int(unsafe.Sizeof(s[0])))
}
