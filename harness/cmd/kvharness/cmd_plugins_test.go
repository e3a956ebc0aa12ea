package main

import (
	"strings"
	"testing"

	"github.com/kvharness/kvharness/harness/plugin"

	"github.com/kvharness/kvharness/harness/internal/kindtest"
	"github.com/kvharness/kvharness/harness/layout"
	"github.com/kvharness/kvharness/harness/protocol/kvpb"
	"github.com/kvharness/kvharness/harness/protocol/wire"
)

// TestRecipeLine: kvharness plugins shows the recipe a layout is judged
// by: the declared one, else the layout's default, and says where a
// declaration does not fit the layout.
func TestRecipeLine(t *testing.T) {
	dsv4 := kindtest.Layout(t, "dsv4-main", 0, 64)
	bf16 := kindtest.Layout(t, "bf16", 128, 64)
	sglang := wire.RecipeToProto(&layout.Recipe{Eps: new(1e-8), Quantize: layout.Reciprocal})
	f32 := wire.RecipeToProto(&layout.Recipe{Scale: layout.ScaleF32})
	for _, tc := range []struct {
		name string
		g    *kvpb.Recipe
		l    *layout.Layout
		want string
	}{
		{"default", nil, dsv4, "(the layout's default): scale ue8m0, eps 1e-4, x/s"},
		{"declared", sglang, dsv4, "(declared): scale ue8m0, eps 1e-8, x*(1/s)"},
		{"misfit", f32, dsv4, "≠ layout: invalid layout \"dsv4-main\": field \"nope\": recipe scale \"f32\""},
		{"bf16", nil, bf16, ""},
		{"bf16 declared", sglang, bf16, "≠ layout: it has no fp8 fields"},
		{"unknown layout", sglang, nil, "(declared): scale from the scale field, eps 1e-8"},
		{"unknown, silent", nil, nil, ""},
		{"unreadable", &kvpb.Recipe{Rounding: 3}, dsv4, "(declared, unreadable): recipe rounding"},
	} {
		r, err := wire.RecipeFromProto(tc.g)
		got := recipeLine(plugin.Geometry{Recipe: r, RecipeErr: err}, tc.l)
		if (tc.want == "") != (got == "") || !strings.Contains(got, tc.want) {
			t.Errorf("%s: %q, want one containing %q", tc.name, got, tc.want)
		}
	}
}
