package store

import (
	"github.com/kvharness/kvharness/harness/layout"
	"github.com/kvharness/kvharness/harness/pool"
	"github.com/kvharness/kvharness/harness/workload"
)

// Far pools (see pool.FarSlots): a default run's store pools reach past
// 4 GiB of byte offsets, checked in live windows (pool.LiveRanges). A set
// checked ahead holds its windows' pages and nothing else, so a set of a
// 4 GiB pool costs what one of a few megabytes did; the exact set holds
// its windows too and materializes whatever else a replayed case names.

// FarSlots is pool.FarSlots.
func FarSlots(l *layout.Layout) int { return pool.FarSlots(l) }

// denseMax is pool.DenseMax.
const denseMax = pool.DenseMax

// RowSlots is the pool of a row of layout l in a run of slots slots: as
// asked, or raised to FarSlots when the run reaches far, or, scaled (a
// GPU whose plugin maps arenas backed whole), cut to deviceBytes a pool
// (a head dim of 576 would make the default million slots 1.2 GiB a pool,
// of which a set keeps three and a target up to nine sets), never below
// 2^17 slots, which pass 16-bit indices.
func RowSlots(l *layout.Layout, slots int, far, scaled bool) int {
	switch {
	case scaled:
		fit := deviceBytes / l.PageBytes() * l.PageSize
		least := (1<<17 + l.PageSize - 1) / l.PageSize * l.PageSize
		return max(min(slots, fit), least)
	case far:
		return max(slots, FarSlots(l))
	}
	return slots
}

// deviceBytes is the most a GPU's default pool takes: what a million
// bf16 slots of head dim 128 take.
const deviceBytes = 256 << 20

// liveRanges, liveWindows and liveBytes are pool's.
func liveRanges(l *layout.Layout, slots int) workload.Ranges { return pool.LiveRanges(l, slots) }

func liveWindows(l *layout.Layout, r pool.Region, live workload.Ranges) []pool.Window {
	return pool.LiveWindows(l, r, live)
}

func liveBytes(l *layout.Layout, slots int) int { return pool.LiveBytes(l, slots) }
