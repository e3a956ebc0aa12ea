package kernel

import (
	"slices"
	"strings"
	"testing"

	"github.com/kvharness/kvharness/harness/sdk"
	"github.com/kvharness/kvharness/plugins/internal/gpustore"
)

// TestSpecsFollowTheVariants: geometry mutants reach the CUDA kernel as
// its addressing macros, arithmetic mutants as its quantizer.
func TestSpecsFollowTheVariants(t *testing.T) {
	for _, tc := range []struct {
		variant, layout string
		quant           gpustore.Quantizer
		want            []string
	}{
		{"", "fp8-paged", gpustore.Quantizer{}, []string{"-DKV_TOKENS_PER_PAGE=64", "-DKV_PAGE_BYTES=8448"}},
		{"", "fp8-rows", gpustore.Quantizer{}, []string{"-DKV_TOKENS_PER_PAGE=1", "-DKV_PAGE_BYTES=132"}},
		{"scale-interleaved", "fp8-paged", gpustore.Quantizer{}, []string{"-DKV_TOKENS_PER_PAGE=1", "-DKV_PAGE_BYTES=132"}},
		{"bytes-per-token-elements", "fp8-paged", gpustore.Quantizer{}, []string{"-DKV_PAGE_BYTES=8192"}},
		{"bytes-per-token-elements", "fp8-rows", gpustore.Quantizer{}, []string{"-DKV_PAGE_BYTES=128"}},
		{"scale-no-floor", "fp8-rows", gpustore.Quantizer{NoFloor: true}, []string{"-DKV_SCALE_FLOOR=0"}},
		{"round-toward-zero", "fp8-rows", gpustore.Quantizer{TowardZeroE4M3: true}, []string{"-DKV_ROUND_TOWARD_ZERO=1"}},
	} {
		s, err := spec(tc.variant, sdk.Layout{Name: tc.layout, HeadDim: 128, PageSize: 64})
		if err != nil {
			t.Fatal(err)
		}
		opts, err := s.Options()
		if err != nil {
			t.Fatal(err)
		}
		for _, w := range tc.want {
			if !slices.Contains(opts, w) {
				t.Errorf("%s %s: options %v lack %s", tc.variant, tc.layout, opts, w)
			}
		}
		if s.Quant != tc.quant || !strings.Contains(source, s.Entry+"(") {
			t.Errorf("%s %s: quantizer %+v entry %s", tc.variant, tc.layout, s.Quant, s.Entry)
		}
	}
}
