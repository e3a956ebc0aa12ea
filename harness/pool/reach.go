package pool

import (
	"cmp"
	"slices"

	"github.com/kvharness/kvharness/harness/layout"
	"github.com/kvharness/kvharness/harness/workload"
)

// Far pools. A kernel that computes slot × bytes per token in 32 bits is
// wrong only where that product passes 2^31 (or, unsigned, 2^32): in the
// pools of real deployments, many gigabytes, and in no pool of a few
// megabytes. So a default run's slot-addressed pools (stores, reads)
// reach past 4 GiB of byte offsets (FarSlots), as sparse memory: the
// pages no window names stay holes of the arena's file (host shared
// memory) or unbacked address space (a GPU's sparse reservation), which
// cost nothing; a write into a hole still shows.
//
// Cases of such a pool draw their slots from its live windows
// (LiveRanges): its first slots, the slots around index 65,536 (past
// 16-bit indices), the pages that straddle byte offsets 2^31 and 2^32,
// and its last slots.
const (
	// FarBytes is how far a pool of a default run reaches: past 2^32
	// bytes, with room for a window there.
	FarBytes = 1<<32 + 32<<20
	// DenseMax is the largest pool checked whole; a larger one is checked
	// in windows.
	DenseMax = 64 << 20
	// nearBytes is the first window's size: its slots are the ones cases
	// draw most (slot 0, the first pages).
	nearBytes = 1 << 20
	// nearSlots is the least the first window holds, so that a batch of
	// distinct slots has room there.
	nearSlots = 1024
	// edgeSlots is the least each other window holds on either side of
	// its edge.
	edgeSlots = 256
)

// FarSlots is how many slots a pool of l needs to reach FarBytes: whole
// pages.
func FarSlots(l *layout.Layout) int {
	pages := (FarBytes + l.PageBytes() - 1) / l.PageBytes()
	return pages * l.PageSize
}

// LiveRanges are the windows of slots cases of a pool of slots slots of
// l draw from: every slot of a pool of at most DenseMax bytes (nil), else
// the windows the package doc lists.
func LiveRanges(l *layout.Layout, slots int) workload.Ranges {
	if l.PoolBytes(slots) <= DenseMax {
		return nil
	}
	p := int64(l.PageSize)
	pages := func(n int64) int64 { return (n + p - 1) / p } // pages holding n slots
	near := pages(max(nearSlots, int64(nearBytes/l.BytesPerToken())))
	half := pages(edgeSlots)
	around := func(page int64) workload.Range {
		return workload.Range{Lo: (page - half) * p, Hi: (page + half + 1) * p}
	}
	rs := []workload.Range{{Lo: 0, Hi: near * p}, around(1 << 16 / p)}
	for _, edge := range []int64{1 << 31, 1 << 32} {
		rs = append(rs, around(edge/int64(l.PageBytes())))
	}
	rs = append(rs, workload.Range{Lo: int64(slots) - 2*half*p, Hi: int64(slots)})
	return workload.Merged(rs, slots)
}

// LiveWindows are the arena windows region r's live slots occupy (its
// pool's footprint of them, page by page), and its guards.
func LiveWindows(l *layout.Layout, r Region, live workload.Ranges) []Window {
	ws := []Window{r.GuardBefore, r.GuardAfter}
	for _, rg := range live {
		first, _ := layout.FloorDiv(rg.Lo, int64(l.PageSize))
		last, _ := layout.FloorDiv(rg.Hi-1, int64(l.PageSize))
		for _, sp := range l.PageSpans(r.Slots, int(first), int(last)) { // each region's pages of them
			ws = append(ws, Window{Off: r.Pool.Off + sp.Off, Len: sp.Len})
		}
	}
	slices.SortFunc(ws, func(a, b Window) int { return cmp.Compare(a.Off, b.Off) }) // in the arena's order, regions interleaved
	return ws
}

// LiveBytes is what a pool of slots slots of l holds in its live windows
// (all of it when it has none), guards included: its share of memory and
// of a scan.
func LiveBytes(l *layout.Layout, slots int) int {
	guards := 2 * max(l.PageBytes(), 4096)
	live := LiveRanges(l, slots)
	if live == nil {
		return l.PoolBytes(slots) + guards
	}
	n := guards
	for _, rg := range live {
		first, _ := layout.FloorDiv(rg.Lo, int64(l.PageSize))
		last, _ := layout.FloorDiv(rg.Hi-1, int64(l.PageSize))
		n += int(last-first+1) * l.PageBytes()
	}
	return n
}
