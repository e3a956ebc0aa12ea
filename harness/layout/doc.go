// Package layout describes paged KV-cache layouts as data and holds the
// reference encoders the oracle compares kernels against.
//
// A Layout says, for a head dimension D and a page size P, how one token's
// key row becomes bytes (its fields: bf16 elements, fp8 e4m3 codes and their
// scales, padding) and where those bytes live in a page (its planes). Two
// arrangements cover the engines kvharness models:
//
//   - rows: every field of a token sits in one record of bytes-per-token
//     bytes, records back to back (vLLM's 132 B indexer rows, plain bf16);
//   - planes: a page holds P records of the first plane, then P records of
//     the next (SGLang's indexer page: P × 128 B of e4m3, then P × 4 B of
//     float32 scales).
//
// From that description a layout answers the questions the oracle asks: the
// byte spans a slot owns (its footprint), which slot and field own a given
// byte, and the exact bytes a correct kernel writes for a row. New layouts
// (DeepSeek-V4's 584 B main KV, vLLM's 656 B fp8_ds_mla) are JSON files, not
// new code paths; see [Parse].
//
// The encoders are deliberately written differently from any kernel: e4m3
// rounding is a search over the 256-entry code table rather than bit
// manipulation, so a kernel and the reference do not share a mistake.
package layout
