package kernel

import (
	"slices"
	"testing"

	"github.com/kvharness/kvharness/harness/sdk"
	"github.com/kvharness/kvharness/harness/sdk/read"
	"github.com/kvharness/kvharness/plugins/internal/cpustore"
)

func TestReadVariantsJoinTheDescription(t *testing.T) {
	byName := func(a, b sdk.Variant) bool { return a.Name == b.Name && a.Doc == b.Doc && a.Kernel == b.Kernel }
	if !slices.EqualFunc(Plugin.Variants, slices.Concat(variants, readVariants), byName) {
		t.Fatalf("described variants %v", Plugin.Variants)
	}
	for _, v := range readVariants {
		if !read.IsVariant(v) {
			t.Errorf("%s is not marked as a read variant", v.Name)
		}
	}
}

// TestScaleStrideReadsTheOtherArrangement: values stay where the store
// puts them; the mutant's scales come from the other layout's place.
func TestScaleStrideReadsTheOtherArrangement(t *testing.T) {
	l := func(name string) sdk.Layout { return sdk.Layout{Name: name, HeadDim: 128, PageSize: 64} }
	paged := cpustore.Paged{P: 64, ValueBytes: 128, ScaleBytes: 4, PageBytes: 132 * 64}
	rows := cpustore.Rows{Stride: 132, ValueBytes: 128}
	for _, tc := range []struct {
		variant, layout        string
		values, scales         cpustore.Geometry
		sameScaleAt, otherSlot int64
	}{
		{"", "fp8-paged", paged, paged, 0, 0},
		{"", "fp8-rows", rows, rows, 0, 0},
		{"scale-stride", "fp8-paged", paged, rows, 63, 5},
		{"scale-stride", "fp8-rows", rows, paged, 63, 5},
	} {
		v, s, err := readGeometry(tc.variant, l(tc.layout))
		if err != nil || v != tc.values || s != tc.scales {
			t.Errorf("%s %s: values %+v scales %+v (%v)", tc.variant, tc.layout, v, s, err)
		}
		if tc.variant == "" {
			continue
		}
		// The two arrangements agree on the last slot of a page and
		// nowhere else: the generator must draw other slots to see it.
		_, a := v.Offsets(tc.sameScaleAt)
		_, b := s.Offsets(tc.sameScaleAt)
		_, c := v.Offsets(tc.otherSlot)
		_, d := s.Offsets(tc.otherSlot)
		if a != b || c == d {
			t.Errorf("%s: scale of slot 63 at %d and %d, of slot 5 at %d and %d", tc.layout, a, b, c, d)
		}
	}
	if _, _, err := readGeometry("scale-stride", l("bf16")); err == nil {
		t.Error("fp8store read bf16")
	}
}
