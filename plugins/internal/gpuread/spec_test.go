package gpuread

import (
	"fmt"
	"regexp"
	"strings"
	"testing"

	"github.com/kvharness/kvharness/harness/sdk"
	"github.com/kvharness/kvharness/harness/sdk/read"
	"github.com/kvharness/kvharness/plugins/internal/cpustore"
	"github.com/kvharness/kvharness/plugins/internal/kerneltest"
)

// TestOptionsCarryBothGeometries: values and scales get their own
// addressing macros, so the scale-stride mutant is a geometry, not code.
func TestOptionsCarryBothGeometries(t *testing.T) {
	paged := cpustore.Paged{P: 64, ValueBytes: 128, ScaleBytes: 4, PageBytes: 132 * 64}
	rows := cpustore.Rows{Stride: 132, ValueBytes: 128}
	opts, err := Spec{Name: "t", Kind: FP8, HeadDim: 128, Values: paged}.Options()
	if err != nil {
		t.Fatal(err)
	}
	kerneltest.HasOptions(t, opts, "-DKV_TOKENS_PER_PAGE=64", "-DKV_PAGE_BYTES=8448", "-DKV_SCALE_TOKENS_PER_PAGE=64", "-DKV_SCALE_PAGE_BYTES=8448",
		"-DKV_FP8=1", "-DKV_READ_RULE=0", "-DKV_HEAD_DIM=128")
	opts, err = Spec{Name: "t", Kind: FP8, HeadDim: 128, Values: paged, Scales: rows, Rule: Scratch}.Options()
	if err != nil {
		t.Fatal(err)
	}
	kerneltest.HasOptions(t, opts, "-DKV_TOKENS_PER_PAGE=64", "-DKV_SCALE_TOKENS_PER_PAGE=1", "-DKV_SCALE_PAGE_BYTES=132", "-DKV_READ_RULE=2")
	opts, err = Spec{Name: "t", Kind: BF16, HeadDim: 64, Values: cpustore.Rows{Stride: 128, ValueBytes: 128}}.Options()
	if err != nil {
		t.Fatal(err)
	}
	kerneltest.HasOptions(t, opts, "-DKV_FP8=0", "-DKV_PAGE_BYTES=128", "-DKV_HEAD_DIM=64")
}

func TestOptionsRefuse(t *testing.T) {
	for _, s := range []Spec{
		{Kind: BF16, HeadDim: 36, Values: cpustore.Rows{Stride: 72, ValueBytes: 72}},
		{Kind: BF16, HeadDim: 128, Values: cpustore.Rows{Stride: 260, ValueBytes: 256}},
		{Kind: FP8, HeadDim: 128, Values: cpustore.Paged{P: 64, ValueBytes: 128, ScaleBytes: 2, PageBytes: 130 * 64}},
	} {
		if _, err := s.Options(); err == nil {
			t.Errorf("%+v accepted", s)
		}
	}
}

// TestRulesMatchTheSource: read.cu documents and implements every rule.
func TestRulesMatchTheSource(t *testing.T) {
	for rule, name := range map[Rule]string{UnmaskedTail: "unmasked-tail", Scratch: "writes-scratch", DenormalsAreZero: "denormals-are-zero",
		KeysPrescaled: "keys-prescaled", SharedRange: "nan-shared-range"} {
		if !regexp.MustCompile(fmt.Sprintf(`(?m)^//\s+%d\s+%s\s`, rule, name)).MatchString(source) {
			t.Errorf("read.cu does not document rule %d as %s", rule, name)
		}
		if !strings.Contains(source, fmt.Sprintf("KV_READ_RULE == %d", rule)) {
			t.Errorf("read.cu does not implement rule %d", rule)
		}
	}
	if !strings.Contains(source, Entry+"(") {
		t.Errorf("read.cu has no %s", Entry)
	}
}

func TestBuffer(t *testing.T) {
	for _, tc := range []struct{ k, tokens, d, want int }{
		{1, 0, 128, 64}, {1, 10, 128, 64}, {4, 100, 128, 128}, {100, 5000, 128, 2048}, {2048, 5000, 128, 4096}, {5000, 100, 128, 0},
		{10, 10, 8192, 64}, {10, 10, 16384, 0},
	} {
		n, err := Buffer(tc.k, tc.tokens, tc.d)
		if (err != nil) != (tc.want == 0) || err == nil && n != tc.want {
			t.Errorf("Buffer(k %d, %d tokens, D %d) = %d, %v; want %d", tc.k, tc.tokens, tc.d, n, err, tc.want)
		}
		if err == nil && (n&(n-1) != 0 || n <= tc.k || 8*n+4*tc.d > SharedBytes) {
			t.Errorf("Buffer(k %d, %d tokens, D %d) = %d: not a power of two above k within shared memory", tc.k, tc.tokens, tc.d, n)
		}
	}
}

func TestReadChecksBeforeLaunching(t *testing.T) {
	var k Kernels
	c := &read.DeviceCall{Arena: 0x1000, Pool: sdk.Pool{Base: 256, Slots: 10}, Requests: 1, K: 1,
		Queries: 0x2000, Indptr: 0x3004, Tokens: 0x4000, OutSlots: 0x5000, OutScores: 0x6000}
	err := k.Read(c, Spec{Kind: BF16, HeadDim: 128, Values: cpustore.Rows{Stride: 256, ValueBytes: 256}})
	if err == nil || !strings.Contains(err.Error(), "indptr") {
		t.Errorf("misaligned indptr: %v", err)
	}
	c.Requests = 0
	if err := k.Read(c, Spec{}); err != nil {
		t.Errorf("an empty read must launch nothing: %v", err)
	}
}
