// fp8store: the padding-aware fp8 store. Rows 0..n-1 are stored, padded
// rows never. Its variants differ in geometry (kernel.go's geometry(): the
// interleaved scale, bytes per token as an element count), which reaches
// this kernel as the addressing macros, or in arithmetic (the scale floor,
// the rounding), which reaches it as KV_SCALE_FLOOR and
// KV_ROUND_TOWARD_ZERO.
struct CountRule {
  __device__ static bool store(int i, int n, kv_i64 loc, kv_i64 slots, kv_i64* slot) {
    *slot = loc;
    return i < n;
  }
};

extern "C" __global__ void __launch_bounds__(KV_BLOCK_THREADS)
    fp8store_store(char* pool, const unsigned short* rows, const kv_i64* loc, const int* valid, int capacity, kv_i64 slots) {
  kv_fp8_store<CountRule>(pool, rows, loc, valid, capacity, slots);
}
