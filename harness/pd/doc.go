// Package pd is what every prefill → decode transfer kind shares: the
// geometry of a multi-buffer KV cache on both sides (buffers, their
// layouts, allocations and page tables), the descriptors engines build
// (NIXL's and Mooncake's contiguous copies) and the checks every
// descriptor must pass, the oracle's view of one buffer's two pools, and
// the relocation-invariant room digests a decode server verifies.
//
// The synchronous transfer kind (harness/kernels/transfer) copies rooms
// within one arena in one call; the asynchronous one
// (harness/kernels/pdasync) posts copies from a prefill process's arena
// into a decode process's, completing by notification. Both build the
// same descriptors over the same geometry, so both judge them here.
package pd
