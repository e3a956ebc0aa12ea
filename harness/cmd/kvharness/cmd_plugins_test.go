package main

import (
	"strings"
	"testing"

	"github.com/kvharness/kvharness/harness/internal/kindtest"
	"github.com/kvharness/kvharness/harness/layout"
	"github.com/kvharness/kvharness/harness/protocol"
	"github.com/kvharness/kvharness/harness/protocol/kvpb"
)

// TestRecipeLine: kvharness plugins shows the recipe a layout is judged
// by: the declared one, else the layout's default, and says where a
// declaration does not fit the layout.
func TestRecipeLine(t *testing.T) {
	dsv4 := kindtest.Layout(t, "dsv4-main", 0, 64)
	bf16 := kindtest.Layout(t, "bf16", 128, 64)
	sglang := protocol.RecipeToProto(&layout.Recipe{Eps: new(1e-8), Quantize: layout.Reciprocal})
	f32 := protocol.RecipeToProto(&layout.Recipe{Scale: layout.ScaleF32})
	for _, tc := range []struct {
		name string
		g    *kvpb.Geometry
		l    *layout.Layout
		want string
	}{
		{"default", &kvpb.Geometry{}, dsv4, "(the layout's default): scale ue8m0, eps 1e-4, x/s"},
		{"declared", &kvpb.Geometry{Recipe: sglang}, dsv4, "(declared): scale ue8m0, eps 1e-8, x*(1/s)"},
		{"misfit", &kvpb.Geometry{Recipe: f32}, dsv4, "≠ layout: invalid layout \"dsv4-main\": field \"nope\": recipe scale \"f32\""},
		{"bf16", &kvpb.Geometry{}, bf16, ""},
		{"bf16 declared", &kvpb.Geometry{Recipe: sglang}, bf16, "≠ layout: it has no fp8 fields"},
		{"unknown layout", &kvpb.Geometry{Recipe: sglang}, nil, "(declared): scale from the scale field, eps 1e-8"},
		{"unknown, silent", &kvpb.Geometry{}, nil, ""},
		{"unreadable", &kvpb.Geometry{Recipe: &kvpb.Recipe{Rounding: 3}}, dsv4, "(declared, unreadable): recipe rounding"},
	} {
		got := recipeLine(tc.g, tc.l)
		if (tc.want == "") != (got == "") || !strings.Contains(got, tc.want) {
			t.Errorf("%s: %q, want one containing %q", tc.name, got, tc.want)
		}
	}
}
