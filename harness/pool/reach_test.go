package pool

import (
	"testing"

	"github.com/kvharness/kvharness/harness/layout"
)

// TestLiveWindowsCoverEveryRegion: a far pool of vLLM's cache (every K
// page, then every V page) has live windows over both regions' pages of
// its live slots, so each live slot's whole footprint, V bytes four
// gigabytes on, lies in a window; and the windows are in arena order.
func TestLiveWindowsCoverEveryRegion(t *testing.T) {
	for _, name := range []string{"vllm-flash", "bf16"} {
		l, err := layout.BuiltinDims(name, layout.Dims{HeadDim: 64, PageSize: 16})
		if err != nil {
			t.Fatal(err)
		}
		slots := FarSlots(l)
		if l, err = l.ForPool(slots); err != nil {
			t.Fatal(err)
		}
		r := Region{Spec: Spec{Layout: l, Slots: slots}, GuardBefore: Window{Off: 0, Len: 4096},
			Pool: Window{Off: 4096, Len: l.PoolBytes(slots)}}
		r.GuardAfter = Window{Off: r.Pool.End(), Len: 4096}
		live := LiveRanges(l, slots)
		ws := LiveWindows(l, r, live)
		for i := 1; i < len(ws); i++ {
			if ws[i].Off < ws[i-1].Off {
				t.Fatalf("%s: windows out of order at %d: %v", name, i, ws)
			}
		}
		for _, rg := range live {
			for _, slot := range []int64{rg.Lo, rg.Hi - 1} {
				for _, sp := range l.Footprint(slot) {
					at := r.Pool.Off + sp.Off
					covered := false
					for _, w := range ws {
						covered = covered || at >= w.Off && at+sp.Len <= w.End()
					}
					if !covered {
						t.Errorf("%s: slot %d's bytes [%d,%d) lie in no live window", name, slot, at, at+sp.Len)
					}
				}
			}
		}
	}
}
