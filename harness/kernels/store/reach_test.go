package store

import (
	"math/rand"
	"testing"

	"github.com/kvharness/kvharness/harness/internal/kindtest"
)

// TestLiveRanges: a pool past 4 GiB of offsets is checked in windows
// holding slot 0, slot 65,536, the slots whose bytes straddle 2^31 and
// 2^32, and the last slot; a small pool whole; drawn cases keep to the
// windows and name slots past both offsets.
func TestLiveRanges(t *testing.T) {
	for _, sh := range [][2]int{{8, 1}, {128, 64}, {576, 256}} {
		for _, name := range []string{"bf16", "fp8-paged", "fp8-rows"} {
			l := kindtest.Layout(t, name, sh[0], sh[1])
			slots := FarSlots(l)
			if l.PoolBytes(slots) <= 1<<32 || slots%l.PageSize != 0 {
				t.Fatalf("%s D=%d P=%d: FarSlots %d is %d bytes", name, sh[0], sh[1], slots, l.PoolBytes(slots))
			}
			live := liveRanges(l, slots)
			for _, s := range []int64{0, 1 << 16, int64(slots - 1)} {
				if !live.Contains(s) {
					t.Errorf("%s D=%d P=%d: slot %d not live in %v", name, sh[0], sh[1], s, live)
				}
			}
			for _, edge := range []int{1 << 31, 1 << 32} {
				var below, above bool
				for _, r := range live {
					for _, s := range []int64{r.Lo, r.Hi - 1} {
						off := l.Footprint(s)[0].Off
						below = below || off < edge
						above = above || off >= edge && off < edge+64<<20
					}
				}
				if !below || !above {
					t.Errorf("%s D=%d P=%d: no window straddles byte offset %d: %v", name, sh[0], sh[1], edge, live)
				}
			}
			g := &Gen{Slots: slots, PageSize: l.PageSize, Padding: PadCount, Live: live, MaxCapacity: 64}
			rng := rand.New(rand.NewSource(1))
			past := 0
			for range 200 {
				c := g.Draw(rng)
				for _, s := range c.Loc {
					if !live.Contains(s) {
						t.Fatalf("%s: case %v names slot %d outside the windows", name, c, s)
					}
					if l.Footprint(s)[0].Off >= 1<<32 {
						past++
					}
				}
			}
			if past == 0 {
				t.Errorf("%s D=%d P=%d: 200 cases named no slot past 4 GiB", name, sh[0], sh[1])
			}
		}
	}
	if l := kindtest.Layout(t, "bf16", 128, 64); liveRanges(l, 1<<17) != nil {
		t.Error("a 32 MiB pool is checked in windows")
	}
}

// TestRowSlots: a pinned pool is as asked; a far one reaches FarSlots; a
// scaled one is cut to deviceBytes but keeps 2^17 slots.
func TestRowSlots(t *testing.T) {
	small, big := kindtest.Layout(t, "bf16", 128, 64), kindtest.Layout(t, "bf16", 576, 64)
	if got := RowSlots(small, 1000, false, false); got != 1000 {
		t.Errorf("pinned: %d", got)
	}
	if got := RowSlots(small, 1000, true, false); got != FarSlots(small) {
		t.Errorf("far: %d, want %d", got, FarSlots(small))
	}
	if got := RowSlots(small, 1<<20, true, true); got != 1<<20 {
		t.Errorf("scaled D=128: %d, want the million slots (256 MiB)", got)
	}
	if got := RowSlots(big, 1<<20, true, true); big.PoolBytes(got) > deviceBytes || got < 1<<17 {
		t.Errorf("scaled D=576: %d slots, %d bytes", got, big.PoolBytes(got))
	}
}
