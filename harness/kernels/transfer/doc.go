// Package transfer is the transfer kernel kind: rooms' pages copied from a
// prefill server's pools to a decode server's, buffer by buffer, as the
// descriptors NIXL and Mooncake take.
//
// A Case carries its whole pd.Geometry (layers of buffers: a bf16 KV buffer,
// a state carved from its allocation, an fp8-paged index-K buffer on its
// own page table) and its rooms' page lists. A Target is an arena with a
// source and a destination pool per buffer; Target.Check calls the
// plugin's Transfer twice and the Oracle judges the descriptors it
// answered (item_len, lengths, offsets, overlaps, coverage of every
// room's page in every buffer) and the bytes the copy left (every
// destination page equals its source, nothing else changed, each room's
// digest as a decode server would verify it). Shrinking drops rooms,
// pages, buffers and layers, so a System opens a target per geometry.
// Schema is how transfer reports read: a row per case profile. A check's
// edges row runs over far pools (reach.go): past 4 GiB of byte offsets,
// in a sparse host arena, with pages drawn at 2 GiB and 4 GiB, where an
// engine's 32-bit offset math wraps.
package transfer
