package kernel

import (
	"context"
	"encoding/binary"
	"math"

	"github.com/kvharness/kvharness/harness/sdk"
	"github.com/kvharness/kvharness/harness/sdk/read"
	"github.com/kvharness/kvharness/plugins/internal/cpuread"
	"github.com/kvharness/kvharness/plugins/internal/cpustore"
	"github.com/kvharness/kvharness/plugins/internal/gpuread"
)

// readVariants mutate the read kernel only; the store stays the fix.
var readVariants = []sdk.Variant{
	read.Variant("unmasked-tail", "scores each token list in tiles of 8 without masking the tail: "+
		"a short list also reads the next request's tokens (unmasked loads)"),
	read.Variant("writes-scratch", "keeps each request's top scores in slot 0, the reserved padding sink "+
		"it assumes nobody reads, and never restores it"),
	read.Variant("keys-prescaled", "doubles each key element in float32 (dequantized, on fp8) before its product and halves the score, "+
		"a factor folded into the keys: exact until a key near the largest finite value overflows to infinity"),
	read.Variant("nan-shared-range", "clamps every score into one range for the whole call, a NaN-propagating min and max over "+
		"every request's scores (as a batched top-k bins by one range): a no-op on finite scores, but one request's NaN score "+
		"makes the range NaN, and every other request of the call answers NaN scores in slot order"),
}

// readRule is the mutant a variant makes of the read kernel.
func readRule(variant string) gpuread.Rule {
	switch variant {
	case "unmasked-tail":
		return gpuread.UnmaskedTail
	case "writes-scratch":
		return gpuread.Scratch
	case "keys-prescaled":
		return gpuread.KeysPrescaled
	case "nan-shared-range":
		return gpuread.SharedRange
	}
	return gpuread.Correct
}

// Read implements read.Reader.
func (*kernel) Read(_ context.Context, c *read.Call) error {
	l := c.Pool.Layout
	g, _, err := geometry("", l.Name, l.HeadDim, l.PageSize)
	if err != nil {
		return err
	}
	pool := c.Arena[c.Pool.Base:]
	var keys cpuread.Keys = cpuread.FP8{Pool: pool, Values: g, Scales: g}
	if l.Name == "bf16" {
		keys = cpuread.BF16{Pool: pool, Geometry: g}
	}
	rule := readRule(c.Variant)
	if rule == gpuread.KeysPrescaled {
		keys = prescaled{pool: pool, geometry: g, fp8: l.Name != "bf16"}
	}
	span := cpuread.ListSpan
	if rule == gpuread.UnmaskedTail {
		span = tiledSpan
	}
	if rule == gpuread.SharedRange {
		sharedRange(c, keys)
		return nil
	}
	for r := range c.Requests {
		top := cpuread.Request(c, keys, span, r)
		cpuread.Write(c, r, top)
		if rule == gpuread.Scratch {
			value, _ := g.Offsets(0)
			scratch(pool[value:value+valueBytes(l)], top)
		}
	}
	return nil
}

// prescaled keys are the keys-prescaled mutant's: each element, times its
// token's scale on fp8, is doubled in float32 before its product, and the
// sum halved. Doubling is exact, so the scores are a correct kernel's
// until 2k overflows: a key past half of float32's largest finite value
// (3.40e38) scores ±Inf, or NaN under a zero query.
type prescaled struct {
	pool     []byte
	geometry cpustore.Geometry
	fp8      bool
}

// Score implements cpuread.Keys.
func (k prescaled) Score(q []float32, slot int64) float32 {
	at, sat := k.geometry.Offsets(slot)
	pre := float32(2)
	if k.fp8 {
		pre *= math.Float32frombits(binary.LittleEndian.Uint32(k.pool[sat:]))
	}
	var acc float32
	for i, x := range q {
		var e float32
		if k.fp8 {
			e = cpuread.E4M3(k.pool[at+i])
		} else {
			e = math.Float32frombits(uint32(binary.LittleEndian.Uint16(k.pool[at+2*i:])) << 16)
		}
		acc += x * float32(e*pre)
	}
	return acc * 0.5
}

// sharedRange reads as the nan-shared-range mutant does: every request's
// scores first, their range over the whole call by Go's min and max (a
// NaN among them makes both NaN), then each score clamped into it before
// its request's top k. Clamping a score into a range that holds it
// changes nothing; clamping it into a NaN range makes it NaN.
func sharedRange(c *read.Call, keys cpuread.Keys) {
	scores := make([][]cpuread.Scored, c.Requests)
	lo, hi := float32(math.Inf(1)), float32(math.Inf(-1))
	for r := range c.Requests {
		scores[r] = cpuread.Scores(c, keys, cpuread.ListSpan, r)
		for _, s := range scores[r] {
			lo, hi = min(lo, s.Score), max(hi, s.Score)
		}
	}
	for r, scored := range scores {
		for i, s := range scored {
			scored[i].Score = min(max(s.Score, lo), hi)
		}
		cpuread.Write(c, r, cpuread.TopK(scored, c.K))
	}
}

// tiledSpan rounds a list up to whole tiles, cut at the call's last token:
// the unmasked-tail mutant.
func tiledSpan(c *read.Call, r int) (int64, int64) {
	lo, hi := c.Indptr[r], c.Indptr[r+1]
	hi = lo + (hi-lo+gpuread.Tile-1)/gpuread.Tile*gpuread.Tile
	return lo, min(hi, int64(len(c.Tokens)))
}

// scratch writes the scores of top into dst as float32s, as far as they
// fit: the writes-scratch mutant's working space.
func scratch(dst []byte, top []cpuread.Scored) {
	for i, s := range top[:min(len(top), len(dst)/4)] {
		binary.LittleEndian.PutUint32(dst[4*i:], math.Float32bits(s.Score))
	}
}

// valueBytes is the bytes of one token's values in layout l.
func valueBytes(l sdk.Layout) int {
	if l.Name == "bf16" {
		return 2 * l.HeadDim
	}
	return l.HeadDim
}

// reads caches the compiled CUDA read kernels.
var reads gpuread.Kernels

// readSpec is the CUDA read kernel of a variant and layout, from the CPU
// kernel's geometry.
func readSpec(variant string, l sdk.Layout) (gpuread.Spec, error) {
	g, _, err := geometry("", l.Name, l.HeadDim, l.PageSize)
	if err != nil {
		return gpuread.Spec{}, err
	}
	s := gpuread.Spec{Name: "fusedstore/read/" + l.Name, Kind: gpuread.FP8, HeadDim: l.HeadDim, Values: g, Rule: readRule(variant)}
	if l.Name == "bf16" {
		s.Kind = gpuread.BF16
	}
	return s, nil
}

// ReadDevice implements read.DeviceReader.
func (*kernel) ReadDevice(_ context.Context, c *read.DeviceCall) error {
	s, err := readSpec(c.Variant, c.Pool.Layout)
	if err != nil {
		return err
	}
	return reads.Read(c, s)
}
