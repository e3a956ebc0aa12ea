package gpustore

import (
	"slices"
	"strings"
	"testing"

	"github.com/kvharness/kvharness/harness/sdk"
	"github.com/kvharness/kvharness/plugins/internal/cpustore"
)

func bf16Spec(d int) Spec {
	return Spec{Name: "t", Kind: BF16, HeadDim: d, PageSize: 64, Geometry: cpustore.Rows{Stride: 2 * d, ValueBytes: 2 * d}}
}

func fp8Spec(d, p int) Spec {
	return Spec{Name: "t", Kind: FP8, HeadDim: d, PageSize: p,
		Geometry: cpustore.Paged{P: p, ValueBytes: d, ScaleBytes: 4, PageBytes: (d + 4) * p}}
}

func hasAll(t *testing.T, opts []string, want ...string) {
	t.Helper()
	for _, w := range want {
		if !slices.Contains(opts, w) {
			t.Errorf("options %v lack %s", opts, w)
		}
	}
}

// TestOptionsCarryTheCPUGeometry: a row layout is one token per page of
// its stride; a paged layout keeps its page; the launch shape and the
// quantizer choices become macros too.
func TestOptionsCarryTheCPUGeometry(t *testing.T) {
	opts, err := bf16Spec(128).Options()
	must(t, err)
	hasAll(t, opts, "-DKV_HEAD_DIM=128", "-DKV_TOKENS_PER_PAGE=1", "-DKV_PAGE_BYTES=256", "-DKV_VALUE_BYTES=256",
		"-DKV_FP8=0", "-DKV_BF16_TPR=16", "-DKV_BF16_RPB=16")

	s := fp8Spec(128, 64)
	s.Defines = []string{"-DFUSED_RULE=3"}
	opts, err = s.Options()
	must(t, err)
	hasAll(t, opts, "-DFUSED_RULE=3", "-DKV_TOKENS_PER_PAGE=64", "-DKV_PAGE_BYTES=8448", "-DKV_VALUE_BYTES=128",
		"-DKV_FP8=1", "-DKV_SCALE_FLOOR=1", "-DKV_ROUND_TOWARD_ZERO=0")

	s.Quant = Quantizer{NoFloor: true, TowardZeroE4M3: true}
	s.Geometry = cpustore.Rows{Stride: 132, ValueBytes: 128} // fp8-rows
	opts, err = s.Options()
	must(t, err)
	hasAll(t, opts, "-DKV_SCALE_FLOOR=0", "-DKV_ROUND_TOWARD_ZERO=1", "-DKV_TOKENS_PER_PAGE=1", "-DKV_PAGE_BYTES=132")
}

// TestCheckRefuses what the vector kernels cannot do, saying how to fix it.
func TestCheckRefuses(t *testing.T) {
	badScale := fp8Spec(128, 64)
	badScale.Geometry = cpustore.Paged{P: 64, ValueBytes: 128, ScaleBytes: 2, PageBytes: 130 * 64}
	oddStride := bf16Spec(128)
	oddStride.Geometry = cpustore.Rows{Stride: 264, ValueBytes: 256}
	for _, tc := range []struct {
		spec Spec
		says string
	}{
		{bf16Spec(40), "multiple of 16"},
		{fp8Spec(0, 64), "multiple of 16"},
		{fp8Spec(128, 0), "page size"},
		{badScale, "float32 scales"},
		{oddStride, "16-byte multiples"},
	} {
		if _, err := tc.spec.Options(); err == nil || !strings.Contains(err.Error(), tc.says) {
			t.Errorf("%+v: error %v; want one saying %q", tc.spec, err, tc.says)
		}
	}
}

// TestShapeCoversCapacity: the grid covers every row exactly once per
// block pass, whatever the head dim, and blocks are legal.
func TestShapeCoversCapacity(t *testing.T) {
	for _, d := range []int{16, 48, 128, 192, 576, 4096} {
		for _, s := range []Spec{bf16Spec(d), fp8Spec(d, 64)} {
			for _, c := range []int{1, 2, 31, 32, 33, 255, 1000, 262144} {
				grid, block := s.Shape(c)
				per := s.RowsPerBlock()
				if int(grid.X)*per < c || (int(grid.X)-1)*per >= c {
					t.Errorf("D=%d kind %d capacity %d: %d blocks of %d rows", d, s.Kind, c, grid.X, per)
				}
				if block.X == 0 || block.X > 256 || (s.Kind == FP8 && block.X%32 != 0) {
					t.Errorf("D=%d kind %d: block of %d threads", d, s.Kind, block.X)
				}
			}
		}
	}
}

// TestLaunchChecksAlignment before it touches a device.
func TestLaunchChecksAlignment(t *testing.T) {
	var k Kernels
	c := &sdk.DeviceStoreCall{Arena: 0x1000, Pool: sdk.Pool{Base: 256}, Rows: 0x2008, Loc: 0x3000, Valid: 0x4000, Capacity: 1}
	err := k.Launch(c, bf16Spec(128))
	if err == nil || !strings.Contains(err.Error(), "rows") || !strings.Contains(err.Error(), "16-byte") {
		t.Fatalf("misaligned rows: %v", err)
	}
}

func TestProgramAppendsThePlugin(t *testing.T) {
	s := bf16Spec(128)
	s.Source = `extern "C" __global__ void mine() {}`
	p := s.Program()
	if !strings.HasPrefix(p, bodies) || !strings.HasSuffix(p, s.Source) || !strings.Contains(bodies, "kv_bf16_store") {
		t.Fatal("the program is not the shared bodies followed by the plugin's source")
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
