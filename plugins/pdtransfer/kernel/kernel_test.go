package kernel

import (
	"slices"
	"testing"

	"github.com/kvharness/kvharness/harness/layout"
	"github.com/kvharness/kvharness/harness/pd"
	"github.com/kvharness/kvharness/harness/sdk"
	"github.com/kvharness/kvharness/harness/sdk/transfer"
)

// TestPageBytesAgreeWithLayouts: the engine's own page sizes are the
// harness's, for every layout it declares.
func TestPageBytesAgreeWithLayouts(t *testing.T) {
	for _, dp := range [][2]int{{128, 64}, {64, 16}, {512, 64}, {576, 3}} {
		for _, g := range geometry("", dp[0], dp[1]) {
			l, err := layout.Builtin(g.Layout, dp[0], dp[1])
			if err != nil {
				t.Fatalf("%s D=%d: %v", g.Layout, dp[0], err)
			}
			if g.BytesPerPage != l.PageBytes() || g.BytesPerToken != l.BytesPerToken() {
				t.Errorf("%s D=%d P=%d: %d B/token %d B/page; the layout has %d, %d", g.Layout, dp[0], dp[1],
					g.BytesPerToken, g.BytesPerPage, l.BytesPerToken(), l.PageBytes())
			}
		}
	}
	if _, err := pageBytes(sdk.Layout{Name: "fp4"}); err == nil {
		t.Error("an unknown layout has a page size")
	}
}

// call builds a transfer call over a geometry as the SDK would, with pool
// bases 1 MiB apart.
func call(g pd.Geometry, rooms ...transfer.Room) ([]sdk.Pool, []transfer.Buffer, []transfer.Room) {
	var pools []sdk.Pool
	n := len(g.Buffers)
	for s, side := range []string{pd.SideSrc, pd.SideDst} {
		for i, b := range g.Buffers {
			pools = append(pools, sdk.Pool{Name: side + "/" + b.Name, Slots: g.Pages * g.PageSize, Base: (s*n + i + 1) << 20,
				Layout: sdk.Layout{Name: b.Layout, HeadDim: b.HeadDim, PageSize: g.PageSize},
				Buffer: &sdk.PoolBuffer{Side: side, Layer: b.Layer, Name: b.Name, Alloc: b.Alloc, Shift: b.Shift}})
		}
	}
	var bufs []transfer.Buffer
	for i, b := range g.Buffers {
		bufs = append(bufs, transfer.Buffer{Index: i, Name: b.Name, Src: pools[i], Dst: pools[n+i], Alloc: b.AllocKey(), Shift: b.Shift})
	}
	return pools, bufs, rooms
}

func build(t *testing.T, variant string, g pd.Geometry, rooms ...transfer.Room) []sdk.Descriptor {
	t.Helper()
	pools, bufs, rooms := call(g, rooms...)
	ds, err := newEngine(variant, pools, bufs).build(rooms)
	if err != nil {
		t.Fatal(err)
	}
	return ds
}

func desc(room uint64, buffer, srcBase, dstBase, src, dst, run, item int) sdk.Descriptor {
	return sdk.Descriptor{Room: room, Buffer: buffer, Src: srcBase + src*item, Dst: dstBase + dst*item, Length: run * item, ItemLen: item, Run: run}
}

// TestRuns: a descriptor per run contiguous on both sides, split where
// either side breaks and where a page table wraps.
func TestRuns(t *testing.T) {
	g := pd.DefaultGeometry(1, 40)
	g.Buffers = slices.Delete(g.Buffers, 1, 2) // kv (identity) and indexk (shift 11)
	room := transfer.Room{ID: 5, Src: []int64{3, 4, 5, 9, 28, 29}, Dst: []int64{10, 11, 20, 21, 30, 31}}
	got := build(t, "", g, room)
	kv, ik := 16384, 8448
	want := []sdk.Descriptor{
		desc(5, 0, 1<<20, 3<<20, 3, 10, 2, kv), desc(5, 0, 1<<20, 3<<20, 5, 20, 1, kv), desc(5, 0, 1<<20, 3<<20, 9, 21, 1, kv), desc(5, 0, 1<<20, 3<<20, 28, 30, 2, kv),
		// indexk: pages +11 mod 40; 28, 29 → 39, 0 wraps on the source side.
		desc(5, 1, 2<<20, 4<<20, 14, 21, 2, ik), desc(5, 1, 2<<20, 4<<20, 16, 31, 1, ik), desc(5, 1, 2<<20, 4<<20, 20, 32, 1, ik),
		desc(5, 1, 2<<20, 4<<20, 39, 1, 1, ik), desc(5, 1, 2<<20, 4<<20, 0, 2, 1, ik),
	}
	if !slices.Equal(got, want) {
		t.Errorf("descriptors\n got %v\nwant %v", got, want)
	}
}

// TestVariants: each mutant changes exactly what its bug changes.
func TestVariants(t *testing.T) {
	g := pd.DefaultGeometry(1, 40)
	room := transfer.Room{ID: 5, Src: []int64{3, 4, 5}, Dst: []int64{10, 20, 21}}
	good := build(t, "", g, room)
	byBuffer := func(ds []sdk.Descriptor, b int) []sdk.Descriptor {
		return slices.DeleteFunc(slices.Clone(ds), func(d sdk.Descriptor) bool { return d.Buffer != b })
	}
	for _, tc := range []struct {
		variant string
		check   func(ds []sdk.Descriptor) bool
	}{
		{"fp8-item-len", func(ds []sdk.Descriptor) bool {
			kv := byBuffer(ds, 0)
			return len(kv) == 2 && kv[0].ItemLen == 132*64 && kv[0].Length == 132*64 && slices.Equal(ds[2:], good[2:])
		}},
		{"skip-buffer", func(ds []sdk.Descriptor) bool {
			return len(byBuffer(ds, 2)) == 0 && slices.Equal(ds, good[:4])
		}},
		{"base-addr-dedup", func(ds []sdk.Descriptor) bool {
			return len(byBuffer(ds, 1)) == 0 && slices.Equal(byBuffer(ds, 0), byBuffer(good, 0)) && slices.Equal(byBuffer(ds, 2), byBuffer(good, 2))
		}},
		{"legacy-page-map", func(ds []sdk.Descriptor) bool {
			ik := byBuffer(ds, 2)
			return len(ik) == 2 && ik[0].Src == 3<<20+3*8448 && slices.Equal(ds[:4], good[:4])
		}},
		{"last-run-truncated", func(ds []sdk.Descriptor) bool {
			kv := byBuffer(ds, 0)
			return len(ds) == len(good) && kv[1].Run == 1 && kv[1].Length == 16384 && kv[0] == good[0]
		}},
	} {
		if ds := build(t, tc.variant, g, room); !tc.check(ds) {
			t.Errorf("%s: %v\n(correct: %v)", tc.variant, ds, good)
		}
	}
	if len(variants) != 7 {
		t.Errorf("%d variants; the tables above, TestRunCrosses64 and TestOffsetInt32 cover 7", len(variants))
	}
}

// TestRunCrosses64: the mutant sends a run that stays inside a 64-page
// chunk as the correct engine does, and splits one that crosses a
// multiple of 64 there, reading the second part from the run's start.
func TestRunCrosses64(t *testing.T) {
	g := pd.DefaultGeometry(1, 256)
	g.Buffers = g.Buffers[:1] // the kv buffer: identity page table
	inside := transfer.Room{ID: 1, Src: []int64{10, 11, 12}, Dst: []int64{100, 101, 102}}
	if got, want := build(t, "run-crosses-64", g, inside), build(t, "", g, inside); !slices.Equal(got, want) {
		t.Errorf("a run inside a chunk: %v; want the correct %v", got, want)
	}
	across := transfer.Room{ID: 2, Src: []int64{62, 63, 64, 65}, Dst: []int64{200, 201, 202, 203}}
	kv := 16384
	want := []sdk.Descriptor{desc(2, 0, 1<<20, 2<<20, 62, 200, 2, kv), desc(2, 0, 1<<20, 2<<20, 62, 202, 2, kv)}
	if got := build(t, "run-crosses-64", g, across); !slices.Equal(got, want) {
		t.Errorf("a run across page 64\n got %v\nwant %v", got, want)
	}
}

// TestDedupWithoutTheOwner: a buffer carved from an allocation whose owner
// is attached but not sent goes out with the owner's base and item_len.
func TestDedupWithoutTheOwner(t *testing.T) {
	g := pd.DefaultGeometry(1, 40)
	pools, bufs, rooms := call(g, transfer.Room{ID: 1, Src: []int64{2}, Dst: []int64{3}})
	ds, err := newEngine("base-addr-dedup", pools, bufs[1:2]).build(rooms)
	if err != nil {
		t.Fatal(err)
	}
	want := desc(1, 1, 1<<20, 4<<20, 2, 3, 1, 16384)
	if len(ds) != 1 || ds[0] != want {
		t.Errorf("descriptors %v, want %v", ds, want)
	}
}

// TestOffsetInt32: the mutant's offsets are the correct ones while page ×
// item_len stays below 2^31, and wrap by 2^32 past it.
func TestOffsetInt32(t *testing.T) {
	g := pd.DefaultGeometry(1, 1<<18) // 16 KiB kv pages: page 131072 starts at 2^31
	g.Buffers = g.Buffers[:1]
	near := transfer.Room{ID: 1, Src: []int64{3}, Dst: []int64{131071}}
	if got, want := build(t, "offset-int32", g, near), build(t, "", g, near); !slices.Equal(got, want) {
		t.Errorf("below 2 GiB: %v, want %v", got, want)
	}
	far := transfer.Room{ID: 1, Src: []int64{3}, Dst: []int64{131072}}
	got, want := build(t, "offset-int32", g, far), build(t, "", g, far)
	if len(got) != 1 || got[0].Src != want[0].Src || got[0].Dst != want[0].Dst-1<<32 {
		t.Errorf("past 2 GiB: %v, want %v with dst 4 GiB early", got, want)
	}
}
