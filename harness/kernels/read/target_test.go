package read

import (
	"context"
	"math/rand"
	"testing"

	"github.com/kvharness/kvharness/harness/arena"
	"github.com/kvharness/kvharness/harness/internal/kindtest"
	"github.com/kvharness/kvharness/harness/internal/plugintest"
	"github.com/kvharness/kvharness/harness/layout"
	"github.com/kvharness/kvharness/harness/oracle"
	"github.com/kvharness/kvharness/internal/testtier"
)

func readTarget(t testing.TB, name, layoutName, variant string) *Target {
	t.Helper()
	p, dir := plugintest.Start(t, name)
	l := kindtest.Layout(t, layoutName, 128, 64)
	tg, err := Open(context.Background(), p, dir, Config{Backend: arena.SHM{}, Variant: variant, Layout: l, Slots: 1024, Seed: 7})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { tg.Close(context.Background()) })
	return tg
}

func vec(kind VecKind, seed uint64) Vec {
	return Vec{Kind: kind, Seed: seed}
}

// readCase has normal keys seeded by slot, and normal queries.
func targetCase(k int, lists ...[]int64) *Case {
	c := &Case{K: k}
	seen := map[int64]bool{}
	for i, l := range lists {
		c.Requests = append(c.Requests, Request{Query: vec(VecNormal, uint64(i+1)), Tokens: l})
		for _, s := range l {
			if !seen[s] {
				seen[s] = true
				c.Keys = append(c.Keys, Key{Slot: s, Vec: vec(VecNormal, uint64(s))})
			}
		}
	}
	return c
}

func TestCorrectReadsPass(t *testing.T) {
	for _, tc := range []struct{ plugin, layout string }{
		{"fusedstore", "bf16"}, {"fusedstore", "fp8-paged"}, {"fusedstore", "fp8-rows"},
		{"fp8store", "fp8-paged"}, {"fp8store", "fp8-rows"},
	} {
		tg := readTarget(t, tc.plugin, tc.layout, "")
		g := &Gen{Slots: tg.Slots, PageSize: 64, MaxRequests: tg.MaxRequests, MaxTokens: tg.MaxTokens, MaxK: tg.MaxK}
		rng := rand.New(rand.NewSource(1))
		cases := []*Case{targetCase(4, []int64{0, 63, 64, 1023}, nil, []int64{5, 0})}
		for range 30 {
			cases = append(cases, g.Draw(rng))
		}
		for _, c := range cases {
			res, err := tg.Check(context.Background(), c)
			if err != nil {
				t.Fatal(err)
			}
			if res.Failed() {
				t.Fatalf("%s %s %v: %v", tc.plugin, tc.layout, c, res.Violations)
			}
		}
	}
}

func TestReadMutantsCaught(t *testing.T) {
	for _, tc := range []struct {
		plugin, layout, variant string
		c                       *Case
		kind                    oracle.Kind
	}{
		{"fusedstore", "bf16", "unmasked-tail", targetCase(4, []int64{1, 2, 3}, []int64{40, 41}), TopK},
		{"fusedstore", "fp8-rows", "writes-scratch", targetCase(1, []int64{5}), Scratch},
		{"fusedstore", "bf16", "writes-scratch", targetCase(1, []int64{0, 5}), ReadOnly},
		{"fp8store", "fp8-paged", "scale-stride", targetCase(1, []int64{3}), Score},
		{"fp8store", "fp8-rows", "scale-stride", targetCase(1, []int64{3}), Score},
	} {
		tg := readTarget(t, tc.plugin, tc.layout, tc.variant)
		res, err := tg.Check(context.Background(), tc.c)
		if err != nil {
			t.Fatal(err)
		}
		if res.Primary() != tc.kind {
			t.Errorf("%s %s %s: primary %q, want %q; %v", tc.plugin, tc.layout, tc.variant, res.Primary(), tc.kind, res.Violations)
		}
	}
}

// TestReadLeavesNothingBehind: after a mutant scribbled on the pool, the
// next case of a correct kernel on the same target sees a clean pool.
func TestReadLeavesNothingBehind(t *testing.T) {
	tg := readTarget(t, "fusedstore", "bf16", "writes-scratch")
	if _, err := tg.Check(context.Background(), targetCase(2, []int64{4, 5})); err != nil {
		t.Fatal(err)
	}
	ws, err := tg.Mem().Changed(tg.Region().Span())
	if err != nil || len(ws) != 0 {
		t.Fatalf("pool changes left behind: %v %v", ws, err)
	}
	if ws, _ := tg.Mem().Changed(tg.Pools.Staging); len(ws) != 0 {
		t.Fatalf("staging changes left behind: %v", ws)
	}
}

func TestReadUnsupported(t *testing.T) {
	p, dir := plugintest.Start(t, "bf16scatter")
	l, _ := layout.Builtin("bf16", 128, 64)
	if _, err := Open(context.Background(), p, dir, Config{Backend: arena.SHM{}, Layout: l, Slots: 64}); err == nil {
		t.Fatal("a plugin without a read kernel was opened for reads")
	}
}

// TestSharedRangeExactOnFiniteValues: the nan-shared-range mutant is the
// correct read on every finite class (clamping a score into a range that
// holds it changes nothing): with ±Inf and NaN left out of the draws it
// passes, so only they kill it.
func TestSharedRangeExactOnFiniteValues(t *testing.T) {
	cases := testtier.Pick(20, 60, 300)
	for _, name := range []string{"bf16", "fp8-paged", "fp8-rows"} {
		tg := readTarget(t, "fusedstore", name, "nan-shared-range")
		tg.NonFinite = layout.NonFiniteUndeclared
		g, rng := NewSystem(tg).Gen, rand.New(rand.NewSource(8))
		if g.NonFinite {
			t.Fatal("the generator draws ±Inf and NaN without a policy")
		}
		for range cases {
			c := g.Draw(rng)
			res, err := tg.Check(context.Background(), c)
			if err != nil {
				t.Fatal(err)
			}
			if res.Failed() {
				t.Fatalf("%s: finite case %v: %v", name, c, res.Violations)
			}
		}
	}
}
