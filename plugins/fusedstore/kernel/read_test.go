package kernel

import (
	"slices"
	"testing"

	"github.com/kvharness/kvharness/harness/sdk"
	"github.com/kvharness/kvharness/harness/sdk/read"
	"github.com/kvharness/kvharness/plugins/internal/gpuread"
)

// TestReadVariantsJoinTheDescription: the read mutants are described after
// the store variants, marked as read variants, and leave the store's own
// list (which numbers the CUDA store rules) alone.
func TestReadVariantsJoinTheDescription(t *testing.T) {
	n := len(Plugin.Variants)
	if n != len(variants)+len(readVariants) || !slices.EqualFunc(Plugin.Variants[:len(variants)], variants, sameVariant) {
		t.Fatalf("described variants %v; want the store's %v, then the read ones", Plugin.Variants, variants)
	}
	for _, v := range Plugin.Variants {
		if read.IsVariant(v) != slices.ContainsFunc(readVariants, func(r sdk.Variant) bool { return sameVariant(r, v) }) {
			t.Errorf("%s: read variant mark wrong (%q)", v.Name, v.Doc)
		}
		if read.IsVariant(v) && rule(v.Name) != 0 {
			t.Errorf("read variant %s changes the store (rule %d)", v.Name, rule(v.Name))
		}
	}
	for name, want := range map[string]gpuread.Rule{"": gpuread.Correct, "unmasked-tail": gpuread.UnmaskedTail, "writes-scratch": gpuread.Scratch,
		"keys-prescaled": gpuread.KeysPrescaled, "nan-shared-range": gpuread.SharedRange, "sink-writes": gpuread.Correct} {
		if got := readRule(name); got != want {
			t.Errorf("readRule(%q) = %d, want %d", name, got, want)
		}
	}
}

func TestReadSpecs(t *testing.T) {
	for layout, kind := range map[string]gpuread.Kind{"bf16": gpuread.BF16, "fp8-paged": gpuread.FP8, "fp8-rows": gpuread.FP8} {
		s, err := readSpec("writes-scratch", sdk.Layout{Name: layout, HeadDim: 128, PageSize: 64})
		if err != nil {
			t.Fatal(err)
		}
		g, _, _ := geometry("", layout, 128, 64)
		if s.Kind != kind || s.Values != g || s.Rule != gpuread.Scratch {
			t.Errorf("%s: %+v", layout, s)
		}
		if _, err := s.Options(); err != nil {
			t.Errorf("%s: %v", layout, err)
		}
	}
	if _, err := readSpec("", sdk.Layout{Name: "dsv4-main", HeadDim: 512, PageSize: 64}); err == nil {
		t.Error("a layout the plugin does not store got a read kernel")
	}
}

// TestTiledSpan rounds lists up to tiles and stops at the last token.
func TestTiledSpan(t *testing.T) {
	c := &read.Call{Indptr: []int64{0, 3, 3, 12}, Tokens: make([]int64, 12)}
	for r, want := range [][2]int64{{0, 8}, {3, 3}, {3, 12}} {
		if lo, hi := tiledSpan(c, r); lo != want[0] || hi != want[1] {
			t.Errorf("request %d: span [%d,%d), want %v", r, lo, hi, want)
		}
	}
}

// sameVariant compares two variants field by field.
func sameVariant(a, b sdk.Variant) bool {
	return a.Name == b.Name && a.Doc == b.Doc && a.Correct == b.Correct && a.Kernel == b.Kernel && a.SlotBits == b.SlotBits &&
		slices.Equal(a.Layouts, b.Layouts)
}
