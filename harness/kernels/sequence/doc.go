// Package sequence is the engine-lifecycle kind: the harness plays a
// serving engine's scheduler over many steps and checks, after every
// step, that every page holds what its owner wrote there and nothing
// else. The incident was not one call: a graph captured at a batch size
// was replayed with its static slot tensor still holding the previous
// step's slots, which by then belonged to other requests; it showed only
// after allocations, frees and reuse had moved pages between requests.
// The recent engine bugs are of that kind too (a prefix-cache insert
// freeing slots an in-flight copy still wrote, host KV released before a
// load-back finished, a connector writing prefix-shared blocks, a
// compiled-kernel cache reused for a second layout, a pinned staging
// buffer overwritten under an async copy). A kind of one call cannot see
// them; this one plays the lifecycle that produces them.
//
// It has no service of its own: a step calls the plugin's existing store
// kernel (Kind.Uses), so any plugin that stores the bf16 layout is
// checked as it is; a plugin that also serves the read or transfer kind
// has its read kernel called between steps and its transfer kernel move
// finished prefills to a decode side.
//
//  1. A Case is a geometry (a bf16 pool per layer, pages of P tokens,
//     page 0 the padding sink, the batch sizes decode graphs were captured
//     at) and steps: arrive (one request or a prefill batch of several:
//     pages allocated in order, the prompts stored eagerly by one store;
//     a prefix shared with a resident request: full pages shared, a
//     partial one copied on write), decode (a token per request of the batch,
//     stored by a graph replay at the smallest captured capacity: the
//     static slot and row tensors live across steps, so the rows past the
//     batch hold the last replay's slots, padding by count, as a replay
//     sees it), finish and abort (pages freed, a shared one when its last
//     holder goes), evict (pages freed, the request waits on the host)
//     and load (a load-back into fresh pages, stored by the plugin), read
//     (the plugin's read kernel over requests' page tables: read.go) and
//     transfer (the plugin's transfer kernel copies a request's pages to
//     a decode side, a second pool per layer whose pages are numbered
//     after the prefill side's: transfer.go). The
//     model (model.go) is the scheduler: its allocator hands out the page
//     freed last first, as engines' free lists do, so a case's steps say
//     where every token lands, and Validate plays a case on it.
//  2. The ownership oracle (shadow.go) gives every page an owner, an
//     epoch, the step that allocated it and the bytes it must hold in
//     each layer, and every slot the step that last wrote it legally.
//     After each step it compares a digest of every live page (never the
//     whole pool) with the shadow's and diffs only a page that differs:
//     the violation names the step, layer, page and slot, the owner and
//     since when, the row the slot holds instead (rows are a function of
//     request, position and the check's salt, so found bytes are named)
//     and the former owner whose row it is. A freed page is filled with
//     poison and checked when it is taken again: a write that landed in it
//     while it was free is named with the holder that left. Shared pages
//     must never change; a row the step stored must be there when the
//     call returns. A read's answer is known to the bit (one-hot queries:
//     a slot's score is one element of its row): a slot scored with a
//     former owner's row, or with what its page held before the write
//     that fills it, is a stale-read naming that owner.
//  3. Gen draws serving-like sequences (a trace, when given, is the first
//     case and the start of the others); Shrink drops prefixes, requests,
//     runs of steps, evictions with their load-backs, batch rows, prompt
//     and prefix tokens, layers, capacities and pages, merges arrivals
//     into one prefill batch, folds a request into another, and renumbers
//     requests, each candidate valid and smaller, so that a failure
//     reaches the few steps it needs (the incident: four); Decode reads
//     fuzz bytes (FuzzSequence). Schema is how reports read: a row per profile.
//  4. A trace (trace.go) is a sequence recorded from an engine with
//     kvharness_sdk.trace: check --kernel sequence --trace FILE replays it
//     and draws from it (docs/sequences.md).
//
// On the host the pool is the harness's own mapping, so digests are
// computed in place. On CUDA a kernel (digest.cu, compiled through the
// NVRTC path of harness/cuda) digests the live pages' list where they
// live, a block per page, and copies back one 64-bit digest a page: the
// per-step check moves 8 bytes a page, and a page's bytes only when its
// digest differs (digest.go).
package sequence
