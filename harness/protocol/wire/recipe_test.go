package wire

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/kvharness/kvharness/harness/layout"
	"github.com/kvharness/kvharness/harness/protocol/kvpb"
)

func TestRecipeRoundTrip(t *testing.T) {
	for _, r := range []*layout.Recipe{
		nil,
		{},
		{Scale: layout.ScaleUE8M0, Eps: new(1e-8), Quantize: layout.Reciprocal, Saturate: new(false), ScaleULPs: new(3)},
		{Scale: layout.ScaleF32, Eps: new(0.0), ScaleULPs: new(0)},
	} {
		back, err := RecipeFromProto(RecipeToProto(r))
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(r, back); diff != "" {
			t.Errorf("round trip (-sent +read):\n%s", diff)
		}
	}
	// eps 0 and saturate false are said, not left unset.
	p := RecipeToProto(&layout.Recipe{Eps: new(0.0), Saturate: new(false)})
	if p.Eps == nil || p.Saturate == nil {
		t.Errorf("explicit zero values lost: %v", p)
	}
}

func TestRecipeFromProtoRefusesUnknownEnums(t *testing.T) {
	for _, tc := range []struct {
		p    *kvpb.Recipe
		want string
	}{
		{&kvpb.Recipe{Scale: 9}, "recipe scale"},
		{&kvpb.Recipe{Quantize: 9}, "recipe quantize"},
		{&kvpb.Recipe{Rounding: 9}, "recipe rounding"},
	} {
		if _, err := RecipeFromProto(tc.p); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: err = %v, want one naming %q", tc.p, err, tc.want)
		}
	}
}
