package gpustore

import (
	"slices"
	"strings"
	"testing"

	"github.com/kvharness/kvharness/harness/sdk"
	"github.com/kvharness/kvharness/harness/sdk/store"
	"github.com/kvharness/kvharness/plugins/internal/cpustore"
	"github.com/kvharness/kvharness/plugins/internal/kerneltest"
)

func bf16Spec(d int) Spec {
	return Spec{Name: "t", Kind: BF16, HeadDim: d, PageSize: 64, Geometry: cpustore.Rows{Stride: 2 * d, ValueBytes: 2 * d}}
}

func fp8Spec(d, p int) Spec {
	return Spec{Name: "t", Kind: FP8, HeadDim: d, PageSize: p,
		Geometry: cpustore.Paged{P: p, ValueBytes: d, ScaleBytes: 4, PageBytes: (d + 4) * p}}
}

// TestOptionsCarryTheCPUGeometry: a row layout is one token per page of
// its stride; a paged layout keeps its page; the launch shape and the
// quantizer choices become macros too.
func TestOptionsCarryTheCPUGeometry(t *testing.T) {
	opts, err := bf16Spec(128).Options()
	must(t, err)
	kerneltest.HasOptions(t, opts, "-DKV_HEAD_DIM=128", "-DKV_TOKENS_PER_PAGE=1", "-DKV_PAGE_BYTES=256", "-DKV_VALUE_BYTES=256",
		"-DKV_FP8=0", "-DKV_BF16_TPR=16", "-DKV_BLOCK_THREADS=1024")

	s := fp8Spec(128, 64)
	s.Defines = []string{"-DFUSED_RULE=3"}
	opts, err = s.Options()
	must(t, err)
	kerneltest.HasOptions(t, opts, "-DFUSED_RULE=3", "-DKV_TOKENS_PER_PAGE=64", "-DKV_PAGE_BYTES=8448", "-DKV_VALUE_BYTES=128", "-DKV_FP8_FMAX=1",
		"-DKV_FP8=1", "-DKV_SCALE_FLOOR=1", "-DKV_ROUND_TOWARD_ZERO=0", "-DKV_FP8_LPR=8", "-DKV_FP8_EPL=8")

	s.Quant = Quantizer{NoFloor: true, TowardZeroE4M3: true}
	s.Geometry = cpustore.Rows{Stride: 132, ValueBytes: 128} // fp8-rows
	opts, err = s.Options()
	must(t, err)
	kerneltest.HasOptions(t, opts, "-DKV_SCALE_FLOOR=0", "-DKV_ROUND_TOWARD_ZERO=1", "-DKV_TOKENS_PER_PAGE=1", "-DKV_PAGE_BYTES=132")
}

// TestTuningMacros: a tuning reaches the kernel as macros, and a bf16
// block holds whole rows.
func TestTuningMacros(t *testing.T) {
	s := fp8Spec(128, 64)
	s.Tune = &Tuning{BlockThreads: 512, RowsPerThread: 4, FP8Lanes: 16, FP8Elems: 4, LoadHint: 3, StoreHint: 1, FP8Div: 2, FP8FMax: true}
	opts, err := s.Options()
	must(t, err)
	kerneltest.HasOptions(t, opts, "-DKV_BLOCK_THREADS=512", "-DKV_ROWS_PER_THREAD=4", "-DKV_FP8_LPR=16", "-DKV_FP8_EPL=4",
		"-DKV_LOAD_HINT=3", "-DKV_STORE_HINT=1", "-DKV_FP8_DIV=2", "-DKV_FP8_PAIR=0", "-DKV_FP8_FMAX=1", "-DKV_IDX32=0")
	if got := s.RowsPerBlock(); got != 512/16*4 {
		t.Errorf("fp8 rows per block = %d; want 128", got)
	}
	b := bf16Spec(48) // 6 chunks of 16 B per row
	b.Tune = &Tuning{BlockThreads: 256, RowsPerThread: 3}
	opts, err = b.Options()
	must(t, err)
	kerneltest.HasOptions(t, opts, "-DKV_BF16_TPR=6", "-DKV_BLOCK_THREADS=252")
	if _, block := b.Shape(1); block.X != 252 || b.RowsPerBlock() != 42*3 {
		t.Errorf("bf16 D=48: block %d, %d rows per block; want 252 threads, 126 rows", block.X, b.RowsPerBlock())
	}
	for _, bad := range []Tuning{
		{BlockThreads: 2048, RowsPerThread: 1, FP8Lanes: 8, FP8Elems: 8},
		{BlockThreads: 256, RowsPerThread: 0, FP8Lanes: 8, FP8Elems: 8},
		{BlockThreads: 256, RowsPerThread: 1, FP8Lanes: 12, FP8Elems: 8},
		{BlockThreads: 256, RowsPerThread: 1, FP8Lanes: 8, FP8Elems: 16},
		{BlockThreads: 100, RowsPerThread: 1, FP8Lanes: 4, FP8Elems: 8},
		{BlockThreads: 256, RowsPerThread: 1, FP8Lanes: 8, FP8Elems: 8, LoadHint: 5},
		{BlockThreads: 256, RowsPerThread: 1, FP8Lanes: 8, FP8Elems: 8, StoreHint: 5},
		{BlockThreads: 256, RowsPerThread: 1, FP8Lanes: 8, FP8Elems: 8, FP8Div: 3},
	} {
		s.Tune = &bad
		if _, err := s.Options(); err == nil || !strings.Contains(err.Error(), "tuning") {
			t.Errorf("tuning %+v: %v; want it refused", bad, err)
		}
	}
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
		{bf16Spec(36), "multiple of 8"},
		{fp8Spec(0, 64), "multiple of 8"},
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
	tunings := []*Tuning{nil, {BlockThreads: 1024, RowsPerThread: 3, FP8Lanes: 4, FP8Elems: 4},
		{BlockThreads: 64, RowsPerThread: 1, BF16Lanes: 8, FP8Lanes: 32, FP8Elems: 8}}
	for _, d := range []int{16, 48, 128, 192, 576, 4096} {
		var specs []Spec
		for _, tu := range tunings {
			b, f := bf16Spec(d), fp8Spec(d, 64)
			b.Tune, f.Tune = tu, tu
			specs = append(specs, b, f)
		}
		for _, s := range specs {
			for _, c := range []int{1, 2, 31, 32, 33, 255, 1000, 262144} {
				grid, block := s.Shape(c)
				per := s.RowsPerBlock()
				if int(grid.X)*per < c || (int(grid.X)-1)*per >= c {
					t.Errorf("D=%d kind %d capacity %d: %d blocks of %d rows", d, s.Kind, c, grid.X, per)
				}
				if block.X == 0 || block.X > 1024 || (s.Kind == FP8 && block.X%32 != 0) {
					t.Errorf("D=%d kind %d: block of %d threads", d, s.Kind, block.X)
				}
			}
		}
	}
}

// TestLaunchChecksAlignment before it touches a device.
func TestLaunchChecksAlignment(t *testing.T) {
	var k Kernels
	c := &store.DeviceCall{Arena: 0x1000, Pool: sdk.Pool{Base: 256}, Rows: 0x2008, Loc: 0x3000, Valid: 0x4000, Capacity: 1}
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

func must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// TestTuningsRoundTrip: TuningEnv's form reads back what String writes,
// and refuses what it cannot read.
func TestTuningsRoundTrip(t *testing.T) {
	env := "bf16=" + DefaultBF16.String() + ";fp8=" + DefaultFP8.String()
	got, err := ParseTunings(env)
	must(t, err)
	if got[BF16] != DefaultBF16 || got[FP8] != DefaultFP8 {
		t.Errorf("ParseTunings(%q) = %+v", env, got)
	}
	if m, err := ParseTunings(""); err != nil || len(m) != 0 {
		t.Errorf("empty: %v %v", m, err)
	}
	for _, bad := range []string{"fp8=blk:1/blk:2", "gpu=blk:1/blk:1/4", "bf16=blk:x/blk:1/4", "bf16=nope:1/blk:1/4", "bf16=blk:1/blk:1/x",
		"bf16=blk:1/blk:1/4/blk:1", "bf16=blk:1/blk:1/4/blk:1/4", "bf16=blk:1/blk:1/4/blk:x/8",
		"bf16=blk:1/blk:1/-1/blk:1/0", "bf16=blk:1/blk:1/-5"} {
		if _, err := ParseTunings(bad); err == nil {
			t.Errorf("ParseTunings(%q) succeeded", bad)
		}
	}
}

// TestForPicksByCapacity: a spec without a tuning takes its kind's Small
// one up to SmallMax rows, the Large one above and the Streaming one from
// StreamingMin (Large for every larger batch when there is no Streaming
// tier); an explicit tuning is kept for every capacity.
func TestForPicksByCapacity(t *testing.T) {
	s := fp8Spec(128, 64)
	if got := *s.For(DefaultFP8.SmallMax).Tune; got != DefaultFP8.Small {
		t.Errorf("For(SmallMax) = %+v", got)
	}
	if got := *s.For(DefaultFP8.SmallMax + 1).Tune; got != DefaultFP8.Large {
		t.Errorf("For(SmallMax+1) = %+v", got)
	}
	if got := *s.For(1 << 20).Tune; DefaultFP8.StreamingMin != 0 || got != DefaultFP8.Large {
		t.Errorf("fp8 (no Streaming tier): For(1 Mi) = %+v; want Large", got)
	}
	b := bf16Spec(128)
	if got := *b.For(DefaultBF16.StreamingMin - 1).Tune; got != DefaultBF16.Large {
		t.Errorf("For(StreamingMin-1) = %+v", got)
	}
	if got := *b.For(DefaultBF16.StreamingMin).Tune; got != DefaultBF16.Streaming || got == DefaultBF16.Large {
		t.Errorf("For(StreamingMin) = %+v; want the Streaming tuning, which differs from Large", got)
	}
	own := Tuning{BlockThreads: 64, RowsPerThread: 1, FP8Lanes: 32, FP8Elems: 4}
	s.Tune = &own
	if s.For(1).Tune != &own || s.For(1<<20).Tune != &own {
		t.Error("For replaced an explicit tuning")
	}
	_, small := fp8Spec(128, 64).For(1).Shape(1)
	_, large := fp8Spec(128, 64).For(1 << 20).Shape(1 << 20)
	if small.X != uint32(DefaultFP8.Small.BlockThreads) || large.X != uint32(DefaultFP8.Large.BlockThreads) {
		t.Errorf("blocks %d and %d; want the Small and Large tunings'", small.X, large.X)
	}
}

// TestTiersMatchFor: the tiers a spec compiles are the tunings For picks
// at every capacity around their bounds, with and without a Streaming
// tier; a tier whose tuning equals the one below shares its kernel; a
// spec with a tuning of its own has one tier.
func TestTiersMatchFor(t *testing.T) {
	same := Tunings{Small: DefaultBF16.Large, Large: DefaultBF16.Large, SmallMax: 512, Streaming: DefaultBF16.Streaming, StreamingMin: 8192}
	for _, tc := range []struct {
		ts     Tunings
		shared []bool
	}{
		{DefaultBF16, []bool{false, false, false}},
		{DefaultFP8, []bool{false, false}},
		{Tunings{Small: DefaultBF16.Small, Large: DefaultBF16.Large, SmallMax: 512}, []bool{false, false}},
		{same, []bool{false, true, false}},
	} {
		tiers, shared := tiersOf(bf16Spec(128), tc.ts)
		if !slices.Equal(shared, tc.shared) {
			t.Errorf("%v: shared %v; want %v", tc.ts, shared, tc.shared)
		}
		r := &ready{tiers: tiers}
		for _, c := range []int{1, tc.ts.SmallMax, tc.ts.SmallMax + 1, tc.ts.StreamingMin - 1, tc.ts.StreamingMin, 1 << 30} {
			if c < 1 {
				continue
			}
			if _, s := r.pick(c); *s.Tune != tc.ts.pick(c) {
				t.Errorf("%v: capacity %d runs %v; For picks %v", tc.ts, c, *s.Tune, tc.ts.pick(c))
			}
		}
	}
	own := Tuning{BlockThreads: 64, RowsPerThread: 1}
	s := bf16Spec(128)
	s.Tune = &own
	tiers, shared := tiersOf(s, DefaultBF16)
	if len(tiers) != 1 || shared[0] || tiers[0].spec.Tune != &own {
		t.Errorf("a spec with its own tuning: %d tiers, shared %v; want 1 tier with that tuning", len(tiers), shared)
	}
	if _, got := (&ready{tiers: tiers}).pick(1 << 20); got.Tune != &own {
		t.Error("one tier: pick did not return it for a large capacity")
	}
}
