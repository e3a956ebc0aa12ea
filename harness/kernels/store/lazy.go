package store

import (
	"golang.org/x/sys/unix"

	"github.com/kvharness/kvharness/harness/pool"
	"github.com/kvharness/kvharness/harness/rundir"
)

// Lazy pools. Exact checks (a confirmation, every shrink step) scan their
// set in full; for a set of 96 MiB (three pools of 131,072 bf16 slots)
// that is milliseconds a check, and a failure shrinks through hundreds.
// So a target whose sets are large keeps its exact set as holes of the
// arena's sparse file (arena.Lazy): before a case runs, the pages its rows
// name are materialized with the background, and a write anywhere else
// lands in a hole, which allocates it. The check then reads the pages it
// materialized plus the file's residency, not the pools. The sets that
// check ahead stay dense: they are scanned where rows point and proved by
// a full scan once per window, and a page fault per row would cost more.
const (
	// lazyMin is the set size from which the exact set fills lazily.
	lazyMin = 16 << 20
	// exactKeep is how many materialized bytes the exact set keeps from
	// check to check (each scans them all); more are given back, those
	// idle for exactAge materializations first.
	exactKeep = 1 << 20
	// exactAge is how many materializations a page stays held after the
	// last that named it. Held, it costs a compare of 4 KiB at every
	// check; given back, a page fault, an allocation and a punch when a
	// case names it again, some twenty compares' worth. So pages that
	// cases keep naming (slot 0, the last slot, their neighbours) stay,
	// and the rest are given back once exactIdle bytes of them have
	// gathered, which spreads a punch over many pages.
	exactAge  = 32
	exactIdle = 64 << 10
	// maxReplays is how often an exact check runs a case again after it
	// wrote holes (a replay finds them materialized and is exact).
	maxReplays = 3
	// exactRoom is what a far target's exact set may hold materialized
	// at once, for the arena's room check: exactKeep, and the pages a
	// batch of the largest capacity names in its three pools.
	exactRoom = 64 << 20
)

// sparseDir reports whether arenas made in dir are sparse files (tmpfs).
func sparseDir(dir *rundir.Dir) bool {
	var st unix.Statfs_t
	return dir != nil && unix.Statfs(dir.Path, &st) == nil && st.Type == unix.TMPFS_MAGIC
}

// lazyRuns reports whether batch runs on lazily filled pools: the exact
// set's of a lazy target (the sets checked ahead on are dense).
func (t *Target) lazyRuns(batch []run) bool { return t.lazy != nil && batch[0].set == 0 }

// fillsLazily reports whether the target's exact set is large enough to
// fill lazily.
func (t *Target) fillsLazily() bool {
	return numPools*t.Layout.PoolBytes(t.Slots) >= lazyMin
}

// materialize writes the background into the pages the runs' footprints
// touch, on a lazy target (the runs are on its exact set).
func (t *Target) materialize(batch []run) error {
	if !t.lazyRuns(batch) {
		return nil
	}
	var ws []pool.Window
	for _, r := range batch {
		ws = append(ws, t.footprints(r)...)
	}
	return t.lazy.Materialize(ws)
}

// strayed lists the holes of the runs' pools that were written (arena
// offsets), on a lazy target.
func (t *Target) strayed(batch []run) ([]pool.Window, error) {
	if !t.lazyRuns(batch) {
		return nil, nil
	}
	var out []pool.Window
	for _, r := range batch {
		ws, err := t.lazy.Strays(t.regionOf(r).Span())
		if err != nil {
			return nil, err
		}
		out = append(out, ws...)
	}
	return out, nil
}

// noteBlocks records the arena's allocated size, on a lazy target: a run
// that writes a hole of the exact set grows it, which sameBlocks sees.
func (t *Target) noteBlocks() error {
	if t.lazy == nil {
		return nil
	}
	b, err := t.lazy.Blocks()
	t.blocks = b
	return err
}

// sameBlocks fails when the arena grew since noteBlocks: a hole was
// written.
func (t *Target) sameBlocks() error {
	if t.lazy == nil {
		return nil
	}
	b, err := t.lazy.Blocks()
	if err == nil && b != t.blocks {
		err = errDirty
	}
	return err
}

// release gives back materialized pages of the exact set, on a lazy
// target: those idle for exactAge materializations, once they are
// exactIdle bytes or the set holds more than exactKeep, then every page
// if the set still holds more than half of exactKeep. They hold the
// background (every run was reset after a capture of the whole set).
func (t *Target) release() error {
	if t.lazy == nil || t.held(exactAge) < exactIdle && t.held(0) <= exactKeep {
		return nil
	}
	return t.batch(func() error {
		for _, age := range []int{exactAge, 0} {
			for p := range numPools {
				for _, w := range t.releasable(t.regionOf(run{pool: p})) {
					if err := t.lazy.ReleaseIdle(w, age); err != nil {
						return err
					}
				}
			}
			if t.held(0) <= exactKeep/2 {
				return nil
			}
		}
		return nil
	})
}

// releasable are the parts of an exact-set region release may give back:
// all of it, or, for a far pool (reach.go), what lies outside its live
// windows, which stay held as the sets checked ahead hold theirs (cases
// keep naming them; a shrunk or replayed case may name other pages).
func (t *Target) releasable(r pool.Region) []pool.Window {
	if t.live == nil {
		return []pool.Window{r.Span()}
	}
	var out []pool.Window
	at := r.Span().Off
	for _, w := range liveWindows(t.Layout, r, t.live) {
		if w.Off > at {
			out = append(out, pool.Window{Off: at, Len: w.Off - at})
		}
		at = max(at, w.End())
	}
	if end := r.Span().End(); end > at {
		out = append(out, pool.Window{Off: at, Len: end - at})
	}
	return out
}

// held is how many bytes the exact set's pools hold materialized outside
// what stays held (releasable), of the pages idle for age
// materializations (every page, for age 0).
func (t *Target) held(age int) int {
	n := 0
	for p := range numPools {
		for _, w := range t.releasable(t.regionOf(run{pool: p})) {
			n += t.lazy.HeldIn(w, age)
		}
	}
	return n
}
