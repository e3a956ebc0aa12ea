// fusedstore: one padding-aware store for every layout. FusedRule makes
// exactly the decisions of store() in kernel.go; FUSED_RULE numbers the
// variants in the order kernel.go lists them.
//   0  (no variant)     rows 0..n-1
//   1  ignore-count     every row whose loc >= 0 (vLLM's guard only)
//   2  sink-writes      rows 0..n-1 and padded rows pointing at slot 0
//   3  minus1-wraps     loc < 0 resolves to loc + slots and is stored
//   4  off-by-one-tail  rows 0..n-2
//   5  slowed           rows 0..n-1, the whole store done twice (correct, slower)
//   6  slowed10         rows 0..n-1, then the first tenth of them (rounded down) again (correct, 10% slower)
//   7  oob-write        rows 0..n-1, row n-1 into slot loc + 2^32: out of bounds
//   8  slot-u16         rows 0..n-1, each into slot (unsigned short)loc
//   9  slowed30         rows 0..n-1, then the first 30% of them (rounded down) again (correct, 30% slower)
//  10  slowed50         rows 0..n-1, then the first half of them (rounded down) again (correct, 50% slower)
//  11  vec16-no-tail    rows 0..n-1; bf16 rows stored by 16 elements, no tail (store.cuh KV_VEC16_NO_TAIL)
//  12  page-size-64     rows 0..n-1; fp8-paged addressed in pages of 64 tokens (device.go's geometry)
//  13  offset-int32     rows 0..n-1; pool offsets in 32 bits, wrapping past 2 GiB (KV_IDX32)
//  14  denormals-are-zero rows 0..n-1; bf16 subnormals flushed to signed zero (KV_BF16_DAZ)
//  15  zero-row-sign    rows 0..n-1; fp8 zero rows as +0 codes (KV_ZERO_ROW_FAST)
//  16  nan-pair-scale   rows 0..n-1; NaN voted over a pair of rows (KV_NAN_PAIR)
// Rules 11 to 16 store the rows rule 0 does: their bugs are in the shared
// bodies or the geometry, switched on by gpustore from the variant; the
// checks below hold each to its switch.
// Rules 17 to 24 are mistakes of the engine layouts only, which
// plugins/internal/enginestore/enginestore.cu stores (its ES_BUG_* switches;
// its ES_RULE takes rules 1 to 8 by these numbers); on this file's layouts
// they store rows 0..n-1:
//  17  nhd-hnd-swapped
//  18  x-split-other-dtype
//  19  kv-swapped
//  20  scale-multiplied
//  21  e5m2-for-e4m3
//  22  fp4-nibbles-swapped
//  23  scale-unswizzled
//  24  mxfp8-reserved-write
// Rule 25 is a mistake of page-table addressing, which this file's
// slot-list stores never take; on slot lists it stores rows 0..n-1:
//  25  page-table-last-overrun
#if FUSED_RULE == 11 && !KV_VEC16_NO_TAIL
#error "rule 11 (vec16-no-tail) needs KV_VEC16_NO_TAIL"
#endif
#if FUSED_RULE == 12 && KV_FP8 && KV_TOKENS_PER_PAGE != 64 && KV_TOKENS_PER_PAGE != 1
#error "rule 12 (page-size-64) addresses fp8-paged pages of 64 tokens"
#endif
#if FUSED_RULE == 13 && !KV_IDX32
#error "rule 13 (offset-int32) needs KV_IDX32"
#endif
#if FUSED_RULE == 14 && !KV_BF16_DAZ
#error "rule 14 (denormals-are-zero) needs KV_BF16_DAZ"
#endif
#if FUSED_RULE == 15 && !KV_ZERO_ROW_FAST
#error "rule 15 (zero-row-sign) needs KV_ZERO_ROW_FAST"
#endif
#if FUSED_RULE == 16 && !KV_NAN_PAIR
#error "rule 16 (nan-pair-scale) needs KV_NAN_PAIR"
#endif
struct FusedRule {
  __device__ static bool store(int i, int n, kv_i64 loc, kv_i64 slots, kv_i64* slot) {
    *slot = loc;
#if FUSED_RULE == 1
    return loc >= 0;
#elif FUSED_RULE == 2
    return i < n || loc == 0;
#elif FUSED_RULE == 3
    if (loc < 0) {
      *slot = loc + slots;
      return true;
    }
    return i < n;
#elif FUSED_RULE == 4
    return i < n - 1;
#elif FUSED_RULE == 7
    if (i == n - 1) *slot = loc + ((kv_i64)1 << 32);
    return i < n;
#elif FUSED_RULE == 8
    *slot = (kv_i64)(unsigned short)loc;
    return i < n;
#elif FUSED_RULE == 17 || FUSED_RULE == 18 || FUSED_RULE == 19 || FUSED_RULE == 20 || FUSED_RULE == 21 || \
    FUSED_RULE == 22 || FUSED_RULE == 23 || FUSED_RULE == 24 || FUSED_RULE == 25
    return i < n;  // the engine layouts' and page tables' mistakes: none on these layouts
#else
    return i < n;
#endif
  }
};

// FUSED_PASSES is how often the store runs. The compiler barrier between
// passes keeps the first pass's stores and the second's loads: without it
// the duplicate work could be optimised away.
#if FUSED_RULE == 5 || FUSED_RULE == 6 || FUSED_RULE == 9 || FUSED_RULE == 10
#define FUSED_PASSES 2
#else
#define FUSED_PASSES 1
#endif
// FUSED_ROWS is the rows pass p covers: all of them, but for the second
// pass of slowed10, slowed30 and slowed50 the first tenth, 30% or half,
// rounded down.
#if FUSED_RULE == 6
#define FUSED_ROWS(p, capacity) ((p) == 0 ? (capacity) : (capacity) / 10)
#elif FUSED_RULE == 9
#define FUSED_ROWS(p, capacity) ((p) == 0 ? (capacity) : (capacity) * 3 / 10)
#elif FUSED_RULE == 10
#define FUSED_ROWS(p, capacity) ((p) == 0 ? (capacity) : (capacity) / 2)
#else
#define FUSED_ROWS(p, capacity) (capacity)
#endif

#if KV_FP8
extern "C" __global__ void __launch_bounds__(KV_BLOCK_THREADS)
    fusedstore_fp8(char* pool, const unsigned short* rows, const kv_i64* loc, const int* valid, int capacity, kv_i64 slots) {
  for (int pass = 0; pass < FUSED_PASSES; pass++) {
    if (pass > 0) asm volatile("" ::: "memory");
    kv_fp8_store<FusedRule>(pool, rows, loc, valid, FUSED_ROWS(pass, capacity), slots);
  }
}
#else
extern "C" __global__ void __launch_bounds__(KV_BLOCK_THREADS)
    fusedstore_bf16(char* pool, const uint4* rows, const kv_i64* loc, const int* valid, int capacity, kv_i64 slots) {
  for (int pass = 0; pass < FUSED_PASSES; pass++) {
    if (pass > 0) asm volatile("" ::: "memory");
    kv_bf16_store<FusedRule>(pool, rows, loc, valid, FUSED_ROWS(pass, capacity), slots);
  }
}
#endif
