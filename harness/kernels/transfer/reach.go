package transfer

import (
	"context"

	"github.com/kvharness/kvharness/harness/arena"
	"github.com/kvharness/kvharness/harness/pool"
	"github.com/kvharness/kvharness/harness/protocol/kvpb"
	"github.com/kvharness/kvharness/harness/target"
)

// Far pools (pd.FarPages): the edges row's pools reach past 4 GiB of byte
// offsets, in a sparse arena on the host (on a GPU run too: Open). Its pools are filled lazily:
// their pages stay holes of the arena's file until a case names them,
// when they are materialized with their background before the call (a
// source page the engine reads must hold its bytes; a destination page
// partly written must show only what was written). A copy into a page no
// case named allocates a hole, which the capture's scan reports as a
// stray write, wherever in the gigabytes it lands; a copy from such a
// page reads zeros, which no source page holds. Pages no case named for
// releaseAge cases are given back after each case.

// residentRoom is what a far arena's pages may hold at once, beyond the
// staging window: the pages of the last releaseAge cases, and strays.
const residentRoom = 64 << 20

// releaseAge is how many cases a materialized page outlives its last use.
const releaseAge = 8

// fillLazily fills every region lazily, each with its background seed,
// and the staging window densely.
func fillLazily(lazy arena.Lazy, mem arena.Memory, plan pool.Geometry, seed int64) error {
	if err := lazy.Reserve(plan.Staging); err != nil {
		return err
	}
	for i, r := range plan.Regions {
		if err := lazy.FillLazy(r.Span(), regionSeed(seed, i)); err != nil {
			return err
		}
	}
	return mem.Fill(plan.Staging, regionSeed(seed, len(plan.Regions)))
}

// runTwice runs the case twice (target.Twice). On a lazily filled target
// a copy into a hole (a page no case named) shows as a whole 4 KiB page
// against the background, the rest of which read as zeros; the capture's
// reset materializes it, so the case is run twice again, now exactly.
func (t *Target) runTwice(ctx context.Context, c *Case, req *kvpb.TransferRequest) (first, again transferRun, err error) {
	if err := t.materialize(c); err != nil {
		return first, again, err
	}
	held := t.held()
	if first, again, err = target.Twice(ctx, t.run, req); err != nil {
		return first, again, err
	}
	if t.held() != held {
		if first, again, err = target.Twice(ctx, t.run, req); err != nil {
			return first, again, err
		}
	}
	return first, again, t.release()
}

// held is what the lazy pools hold materialized (0 on a dense target).
func (t *Target) held() int {
	if t.lazy == nil {
		return 0
	}
	return t.lazy.Held()
}

// materialize writes the background into the pages c names, in every
// buffer's two pools, on a lazily filled target.
func (t *Target) materialize(c *Case) error {
	if t.lazy == nil {
		return nil
	}
	var ws []pool.Window
	for _, b := range t.Buffers {
		page := func(r pool.Region, p int64) pool.Window {
			return pool.Window{Off: r.Pool.Off + int(b.Phys(p))*b.PageBytes, Len: b.PageBytes}
		}
		for _, r := range c.Rooms {
			for i := range r.Src {
				ws = append(ws, page(b.Src, r.Src[i]), page(b.Dst, r.Dst[i]))
			}
		}
	}
	return t.lazy.Materialize(ws)
}

// release gives back the pages no case of the last releaseAge named, on
// a lazily filled target.
func (t *Target) release() error {
	if t.lazy == nil {
		return nil
	}
	for _, r := range t.Pools.Regions {
		if err := t.lazy.ReleaseIdle(r.Span(), releaseAge); err != nil {
			return err
		}
	}
	return nil
}
