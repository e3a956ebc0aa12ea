// bf16scatter: buf[loc] = k for every row of the batch, as the CPU kernel
// does. No valid count, no padding check: the incident's bug, kept on
// purpose. Captured in a CUDA graph at capacity C and replayed with fewer
// valid rows, it writes the padded rows' slots (slot 0 under sink padding).
struct ScatterRule {
  __device__ static bool store(int i, int n, kv_i64 loc, kv_i64 slots, kv_i64* slot) {
    *slot = loc;
    return true;
  }
};

extern "C" __global__ void __launch_bounds__(KV_BLOCK_THREADS)
    bf16scatter_store(char* pool, const uint4* rows, const kv_i64* loc, const int* valid, int capacity, kv_i64 slots) {
  kv_bf16_store<ScatterRule>(pool, rows, loc, valid, capacity, slots);
}
