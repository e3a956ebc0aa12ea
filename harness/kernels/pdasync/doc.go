// Package pdasync is the asynchronous prefill → decode transfer kind:
// two processes of one plugin play the two servers of a disaggregated
// deployment, each with an arena of its own (host shared memory; on a GPU
// machine its GPU's memory, exported by IPC), and the harness is the wire
// between them.
//
// The bugs of real disaggregated serving are about completion, not bytes:
// a decode that reuses pages while the prefill's writer is still in flight
// after an abort (sglang #24527), that declares a room done after the
// first of several components (sglang #39846), whose first failed handle
// frees blocks while sibling handles still write (vllm PR #56104), that
// sends virtual page indices as physical after compaction (sglang PR
// #31471), or a prefill that takes a successful poll for completion
// (ai-dynamo/nixl #182). Random delays find a few of them sometimes; this
// kind finds each every time, because the harness holds every copy behind
// a gate and decides, case by case, what happens when:
//
//  1. The decode process is given each room (its virtual pages and the
//     page table) and answers the physical pages it wants written; the
//     prefill process is given the room with those pages and posts every
//     handle at once, each behind its gate in the prefill arena.
//  2. The case's steps (Step) open or fail one gate at a time, poll the
//     prefill with gates held, deliver withheld notifications to the
//     decode in any order, and abort rooms mid-flight. The moment the
//     decode reads a room or frees its pages, the harness gives them to
//     the next owner (a fill of a new epoch, or a waiting room).
//  3. Then it drains: every gate opened, every notification delivered.
//
// The oracle (a world of gates, notes and page epochs) judges every answer
// as it comes: the decode's pages against the page table, every handle's
// descriptors (package pd's checks), every notification against the gates,
// every read against what has completed and been delivered, every free
// against the handles that can still land, every byte that lands against
// the descriptors and the page's owner in its epoch, and every byte of a
// read room against its source. A copy that lands on a page after it came
// back is named by the page's epochs.
//
// A default check's edges row runs over far pools (reach.go): the largest
// buffer's pool reaches past 4 GiB of byte offsets, in sparse host arenas
// whose pages stay holes until a case names them, and rooms are drawn at
// the pages that straddle 2 GiB and 4 GiB. The oracle then watches the
// case's pages alone (image.go): a copy anywhere else allocates a hole,
// which it reports as a stray write.
//
// Shrinking drops rooms, steps, components, handles, pages and buffers,
// and tries the identity page table, so a counterexample is the smallest
// schedule that still breaks the same invariant. Schema is how reports
// read; Kind is the kind's entry in the registry.
package pdasync
