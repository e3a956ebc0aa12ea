// Package layout describes paged KV-cache layouts as data and holds the
// reference encoders the oracle compares kernels against.
//
// # What a layout says
//
// A store kernel is given, per token, K and V (or one latent row): each a
// tensor of H heads × D elements. It writes them into a pool of pages, P
// tokens to a page, at the slot the caller names. A [Layout] says, for a
// head count H, a head dimension D and a page size P, which bytes each
// token's elements become (its fields: bf16 or fp16 elements, fp8 or fp4
// codes, their scales, padding) and where in the pool each of those bytes
// lives. From that it answers the oracle's questions: the byte spans a
// slot owns ([Layout.Footprint]), which slot and field own a pool byte
// ([Layout.Locate]), the exact bytes a correct kernel writes for a row
// ([Layout.Encode]) and whether a kernel's bytes are right
// ([Layout.Judge]).
//
// # Fields, units and the token image
//
// A field takes elements [From, To) of each head of one tensor and stores
// them in units: an element (bf16, fp16, e4m3, e5m2), a byte holding two
// e2m1 elements (NVFP4), a group's scale (float32, ue8m0 or e4m3), a pad
// byte. Whatever the placement, Encode and Judge see a token's bytes as
// one token image: each field's units, head-major, one field after
// another. The placement only says where the image's bytes go.
//
// # The algebra: where units go
//
// A field's placement is a CuTe-style layout ([Place]): an offset in a
// page of a region, plus a sum of modes ([Map]), each a shape:stride map
// over coordinates of the unit — the slot in the page, the head, the unit.
// A mode splits its index colexicographically by its shape, so splits and
// tiles are data:
//
//	NHD K, (P, H, D) bf16:          slot (P):(2HD)   head (H):(2D)   unit (D):(2)
//	HND K, (H, P, D):               slot (P):(2D)    head (H):(2PD)  unit (D):(2)
//	vLLM paged K, (H, D/x, P, x):   slot (P):(2x)    head (H):(2PD)  unit (x, D/x):(2, 2Px)
//	vLLM paged V, (H, D, P):        slot (P):(2)     head (H):(2PD)  unit (D):(2P)
//	SGLang 16×16 tiles:             slot (16, P/16):(16, 16D)        unit (16, D/16):(1, 256)
//	vLLM NVFP4 scale swizzle:       slot (4, P/4):(1, 4R)            unit (S/4, 4):(4, R)
//
// A mode may also flatten several coordinates into one index before
// splitting it (composition: a block-scale matrix whose rows are slot·H +
// head, tiled 128 rows at a time). Engines write such maps as index
// formulas; [BuiltinDims]'s doc lines name the source each one mirrors,
// and the tests rebuild every built-in from its engine's own formula.
//
// # Regions and tensors
//
// The pool is a sequence of regions ([Region]), each as many pages long
// as the pool has pages; a region's page stride is its own, independent of
// any tensor's leading dims. vLLM's (2, num_blocks, P, H, D) cache is two
// regions, every K page then every V page; FlashInfer's (num_pages, 2, P,
// H, D) is one region whose page holds K then V; SGLang's per-layer
// k_buffer and v_buffer are two regions. Because a later region starts
// after all pages of the earlier ones, a layout of several regions is
// bound to its pool's size before it can place a slot ([Layout.ForPool]).
//
// The layouts of the original schema have no places: their fields sit in
// planes, a page holding P records of one plane, then P of the next
// (SGLang's indexer page: P × 128 B of e4m3, then P × 4 B of scales).
// Planes are a special case of the algebra — one region, a slot stride
// per plane — and keep their closed forms, so today's five layouts answer
// exactly as before (testdata/today.golden.json holds the proof).
//
// A footprint is one span per piece: a run of a slot's bytes contiguous in
// the pool for every slot (a plane's record; a head's elements in HND; x
// elements in vLLM's paged K; one byte of a swizzled scale). Encode
// returns one record per piece, in the same order.
//
// Compiling a layout checks it: every coordinate mapped, every unit
// inside its region's page and aligned to its size, and no two units on
// one byte — proven from the strides where they nest (a mixed radix,
// which also inverts the map for Locate), else by visiting every unit.
// Errors are one line naming the field.
//
// # Formats and recipes
//
// Correct kernels quantize in more than one way: eps 1e-8 or 1e-4, x/s or
// x·(1/s), PyTorch's amax·fl32(1/448) for the scale, approximate division,
// power-of-two (ue8m0) scales. A [Recipe] on an e4m3 or e5m2 field says
// which one a kernel uses (the plugin declares it, as it declares its
// bytes per token; [Layout.WithRecipe]) and [Recipe.Quant] resolves it
// into the arithmetic the encoder and the judgement follow. The formats:
//
//   - e4m3 and e5m2 with a stored scale per group (float32 or ue8m0):
//     the DeepSeek indexer and MLA caches, MXFP8 (e4m3 with a ue8m0 scale
//     per 32, the scale rounded up to a power of two);
//   - e4m3 and e5m2 with a static scale, one per tensor or per head, that
//     the caller passes the kernel and the cache does not store (vLLM's
//     and SGLang's fp8 caches, x / k_scale); see [Inputs];
//   - NVFP4: e2m1 codes two to a byte, an e4m3 scale per 16 elements and
//     a float32 global scale, 1/k_scale;
//   - bf16 and fp16 elements, copied.
//
// The encoders are deliberately written differently from any kernel:
// each format's rounding is checked against a search over its code table,
// so a kernel and the reference do not share a mistake.
//
// # Judgement
//
// [Layout.Judge] tells arithmetic from bugs. A stored scale passes within
// the recipe's ulps (default 1) of max(amax, eps)/448, or, under the ue8m0
// rule, as a power of two that such a scale rounds up to; an NVFP4 block
// scale passes as the e4m3 rounding of global·amax/6, its neighbour only
// at a boundary. Each code is judged against the kernel's own stored scale
// (or the static one it was given): it must be the recipe's rounding of
// x/s, its neighbour accepted only where x/s lies within [CodeEps] of the
// boundary between them, and on an exact tie only where the arithmetic
// can be inexact (the scale is no power of two). A floor is not
// arithmetic: a group that fails the scale rule is tried under other
// floors, and the finding names the one that explains it, to be declared.
// bf16 and fp16 fields stay bit-exact, and [Exact] mode demands the
// reference encoding bit for bit everywhere. Findings name the field, the
// head and group, the bytes, and the decoded values beside the hex.
//
// Pad fields are don't-care unless the layout's [PadPolicy] requires zero
// or that they keep their bytes ([Layout.DontCare], [Layout.Kept]); a
// kernel may declare its own policy over the layout's
// ([Layout.WithPadPolicy]).
//
// # Layouts as data
//
// Built-in layouts are named after what they model ([Names] for the five
// of the planes schema, [ModelNames] for the engines' caches, each with H,
// D and P as parameters: [BuiltinDims]); any other is a JSON file, the
// same form [Layout.JSON] prints ([Parse]).
package layout
