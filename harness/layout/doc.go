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
//
// # Recipes and value judgement
//
// Correct kernels quantize in more than one way: eps 1e-8 or 1e-4, x/s or
// x·(1/s), PyTorch's amax·fl32(1/448) for the scale, approximate division,
// power-of-two (ue8m0) scales. A [Recipe] on an e4m3 field says which one
// a kernel uses (the plugin declares it, as it declares its bytes per
// token; [Layout.WithRecipe]) and [Recipe.Quant] resolves it into the
// arithmetic the encoder and the judgement follow.
//
// [Layout.Judge] tells arithmetic from bugs. A stored scale passes within
// the recipe's ulps (default 1) of max(amax, eps)/448, or, under the ue8m0
// rule, as a power of two that such a scale rounds up to. Each code is
// judged against the kernel's own stored scale: it must be the recipe's
// rounding of x/s, its neighbour accepted only where x/s lies within
// [CodeEps] of the boundary between them, and on an exact tie only where
// the arithmetic can be inexact (the scale is no power of two). A floor is
// not arithmetic: a group that fails the scale rule is tried under other
// floors, and the finding names the one that explains it, to be declared.
// bf16 fields stay bit-exact, and [Exact] mode demands the reference
// encoding bit for bit everywhere.
//
// Pad fields are don't-care unless the layout's [PadPolicy] requires zero
// ([Layout.DontCare]).
package layout
