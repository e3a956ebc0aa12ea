package kernel

import (
	"context"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/kvharness/kvharness/harness/layout"
	"github.com/kvharness/kvharness/harness/sdk"
	"github.com/kvharness/kvharness/harness/sdk/store"
)

// TestArithmeticMutantsFailTheRecipe: judged by the recipe the kernel
// declares, with its tolerances, the shipped kernel passes every row and
// the arithmetic mutants still fail, by the rule their bug breaks: the
// tolerances hide neither a missing floor nor a truncation.
func TestArithmeticMutantsFailTheRecipe(t *testing.T) {
	for _, tc := range []struct {
		variant string
		rule    layout.Rule // "" : passes
	}{{"", ""}, {"scale-no-floor", layout.RuleScale}, {"round-toward-zero", layout.RuleCode}} {
		for _, name := range []string{"fp8-paged", "fp8-rows"} {
			fs := storeAndJudge(t, tc.variant, name)
			switch {
			case tc.rule == "" && len(fs) > 0:
				t.Errorf("%q on %s: %s", tc.variant, name, fs[0])
			case tc.rule != "" && !hasRule(fs, tc.rule):
				t.Errorf("%q on %s: no %s finding among %d", tc.variant, name, tc.rule, len(fs))
			}
		}
	}
}

func hasRule(fs []layout.Finding, r layout.Rule) bool {
	for _, f := range fs {
		if f.Rule == r {
			return true
		}
	}
	return false
}

// storeAndJudge stores zero, normal and tiny rows with a variant and
// judges each slot under the plugin's declared recipe.
func storeAndJudge(t *testing.T, variant, name string) []layout.Finding {
	t.Helper()
	const d, p, n = 128, 64, 96
	l, err := layout.Builtin(name, d, p)
	if err != nil {
		t.Fatal(err)
	}
	if l, err = l.WithRecipe(recipe); err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(1, 2))
	rows := make([]uint16, n*d)
	loc := make([]int64, n)
	for i := range n {
		loc[i] = int64(2*i + 1)
		for j := range d {
			switch i % 3 {
			case 1:
				rows[i*d+j] = layout.Float32ToBF16(float32(rng.NormFloat64() * math.Ldexp(1, rng.IntN(20)-10)))
			case 2:
				rows[i*d+j] = layout.Float32ToBF16(float32((rng.Float64()*2 - 1) * 9e-5))
			}
		}
	}
	pool := sdk.Pool{Name: name, Slots: 4 * p, Bytes: l.PoolBytes(4 * p), Layout: sdk.Layout{Name: name, HeadDim: d, PageSize: p}}
	arena := make([]byte, pool.Bytes)
	c := &store.Call{Variant: variant, Pool: pool, Arena: arena, Capacity: n, Valid: n, Rows: rows, Loc: loc, SlotBits: 64}
	if err := Plugin.Kernel.(store.Storer).Store(context.Background(), c); err != nil {
		t.Fatal(err)
	}
	var out []layout.Finding
	for i := range n {
		var recs [][]byte
		for _, sp := range l.Footprint(loc[i]) {
			recs = append(recs, arena[sp.Off:sp.End()])
		}
		out = append(out, l.Judge(rows[i*d:(i+1)*d], recs, layout.ByRecipe)...)
	}
	return out
}
