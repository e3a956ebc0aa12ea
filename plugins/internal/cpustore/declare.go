package cpustore

import (
	"github.com/kvharness/kvharness/harness/layout"
	"github.com/kvharness/kvharness/harness/sdk"
)

// Recipe is Exact's arithmetic as a store declares it: the scale
// max(1e-4, amax)/448 and the codes x/s, as the bundled CUDA stores
// compute them too, IEEE through ±Inf and NaN (an infinite element makes
// the scale infinite, a NaN one codes NaN: both quantizers' max ignores
// NaN by comparison).
var Recipe = &layout.Recipe{Eps: new(1e-4), Quantize: layout.Divide, NonFinite: layout.Propagate}

// Declare is a store's geometry for each named layout, as its plugin
// describes it: perToken(name) bytes a token and p tokens a page, and on
// the fp8 layouts the recipe its quantizer follows (bf16 rows are stored
// exactly: nothing to declare). A plugin passes the bytes per token of
// the Geometry it stores by, so what it declares cannot drift from where
// it writes.
func Declare(names []string, p int, recipe *layout.Recipe, perToken func(name string) int) []sdk.Geometry {
	out := make([]sdk.Geometry, 0, len(names))
	for _, name := range names {
		n := perToken(name)
		g := sdk.Geometry{Layout: name, BytesPerToken: n, BytesPerPage: n * p}
		if name != "bf16" {
			g.Recipe = recipe
		}
		out = append(out, g)
	}
	return out
}
