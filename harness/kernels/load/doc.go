// Package load is the load kernel kind: layer loads and stream ordering,
// the seed incident's other suspects. A HiCache-style layer load that
// lacked the index-K buffer's wait_layer_transfer gate, and multi-stream
// overlap, were ordering bugs: every write in bounds and at the right
// slot, eventually, so no sanitizer sees them and tests that synchronise
// the device before every check never do. This kind makes each of them
// fail every time, at the first cases, with a minimal schedule.
//
// A Case is an op over some layers, buffers (a DeepSeek-V4 layer's kv,
// indexk and scales) and pages, and its schedule:
//
//   - load: the plugin copies the pages of every layer and buffer from a
//     host pool (region 1 of the arena: host shared memory, pinned by the
//     plugin on a GPU) to device pools (region 0) on streams of its own,
//     recording per-layer completion however it likes; the harness is the
//     consumer: for each layer, and each buffer in the case's reading order
//     (the indexer reads index-K before attention reads KV), it calls the
//     plugin's gate on its consumer stream and queues a probe that copies
//     the pages out.
//   - store: for each layer the caller writes inputs on its stream, the
//     plugin stores them into the device pool on a side stream for the
//     caller, and the caller probes the pages: the multi-stream overlap.
//   - late copies are held, with whatever follows them on their stream,
//     behind the SDK's latch (cuStreamWaitValue32 on a flag on the GPU; the
//     SDK's host streams on the CPU) until the consumer is queued and
//     everything not held has run. Every destination starts as poison (its
//     pool's seeded background), so a probe that a gate did not order after
//     its copy reads poison, deterministically.
//   - failing copies: the SDK's copy fails; the gate must say so.
//   - readers: a reader on another stream still holds destination pages
//     (the previous step's attention), held behind the latch; a load or
//     store that does not wait for it overwrites them first.
//
// The pipeline: Gen draws a case per profile (a suite row: load, fail,
// reuse, store, edges; the edges row's pools reach past 4 GiB of byte
// offsets by default, as sparse memory, reach.go), placing the first late copy after the first layer when
// there are several, as a forward running ahead of its load meets it; a
// Target plans the two-region arena and sends the case as one Load call;
// the oracle (judge) knows every byte a correct run shows and classifies
// what the probes, the readers and the pools afterwards hold, naming the
// layer, buffer and page and the missing ordering edge; the
// happens-before checker (hb.go) is the second oracle: over the SDK's log
// of every stream operation (reads, writes, records, waits, counter
// writes and waits), it flags two operations on different streams that
// touch the same bytes, one writing, with no path between them, even on a
// run (latch off) where timing hid the bug. Shrink keeps the property and
// ends at the fewest layers, buffers and pages and the one late copy.
// Schema is how reports read: a row per profile.
package load
