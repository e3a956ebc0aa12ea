package store

import (
	"math/rand/v2"
	"sort"
	"testing"

	"github.com/kvharness/kvharness/harness/oracle"
	"github.com/kvharness/kvharness/harness/pool"
)

// TestSeekIsSearch: seek finds the window a binary search over every
// window finds, whatever order the offsets are asked in (a row's spans
// ascend, the next row's start lower).
func TestSeekIsSearch(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 7))
	for trial := range 50 {
		var ws []pool.Window
		for at := rng.IntN(8); len(ws) < trial*7; {
			l := 1 + rng.IntN(6)
			ws = append(ws, pool.Window{Off: at, Len: l})
			at += l + 1 + rng.IntN(20)
		}
		v := &classifier{delta: oracle.Delta{Windows: ws}}
		end := 10
		if len(ws) > 0 {
			end = ws[len(ws)-1].End() + 10
		}
		for range 400 {
			off := rng.IntN(end)
			if rng.IntN(3) > 0 { // mostly ascending runs, as a row's spans
				off = min(end-1, v.seekAtOff()+rng.IntN(30))
			}
			want := sort.Search(len(ws), func(i int) bool { return ws[i].End() > off })
			if got := v.seek(off); got != want {
				t.Fatalf("trial %d: seek(%d) = %d, want %d (windows %v)", trial, off, got, want, ws)
			}
		}
	}
}

// seekAtOff is the offset of the window seek found last, or 0.
func (v *classifier) seekAtOff() int {
	if v.seekAt < len(v.delta.Windows) {
		return v.delta.Windows[v.seekAt].Off
	}
	return 0
}
