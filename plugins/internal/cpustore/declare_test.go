package cpustore

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/kvharness/kvharness/harness/sdk"
)

// TestDeclare: each layout gets the bytes per token it is given, a page of
// p tokens, and the recipe on the fp8 layouts only.
func TestDeclare(t *testing.T) {
	perToken := map[string]int{"bf16": 256, "fp8-paged": 132, "fp8-rows": 128}
	got := Declare([]string{"bf16", "fp8-paged", "fp8-rows"}, 16, Recipe, func(name string) int { return perToken[name] })
	want := []sdk.Geometry{
		{Layout: "bf16", BytesPerToken: 256, BytesPerPage: 256 * 16},
		{Layout: "fp8-paged", BytesPerToken: 132, BytesPerPage: 132 * 16, Recipe: Recipe},
		{Layout: "fp8-rows", BytesPerToken: 128, BytesPerPage: 128 * 16, Recipe: Recipe},
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("Declare (-want +got):\n%s", d)
	}
}
