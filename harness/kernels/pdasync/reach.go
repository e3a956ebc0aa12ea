package pdasync

import (
	"github.com/kvharness/kvharness/harness/arena"
	"github.com/kvharness/kvharness/harness/pool"
)

// Far pools (pd.FarPages): the edges row's pools reach past 4 GiB of byte
// offsets, in sparse arenas on the host (on a GPU run too: open). Their
// pages stay holes of the arenas' files until a case names them, when
// they are materialized with their background before the case runs (a
// source page the engine reads must hold its bytes; a decode page the run
// watches must show only what lands). A copy into a page no case named
// allocates a hole, which the run's observations report as a stray write
// wherever in the gigabytes it lands (image.go); a copy from such a page
// reads zeros, which no source page holds. Every page is given back
// before the next case: the decode pages a case holds are then exactly
// the ones it watches, so a copy into a page an earlier case named is a
// stray too.

// residentRoom is what a far arena's pages may hold at once, beyond the
// staging window: a case's pages, and strays.
const residentRoom = 64 << 20

// materialize writes the background into the pages c names, in every
// buffer's source and decode pools, on a lazily filled target.
func (t *Target) materialize(c *Case) error {
	if t.lazyPrefill == nil || t.lazyDecode == nil {
		return nil
	}
	var src, dst []pool.Window
	for _, b := range t.Buffers {
		page := func(r pool.Region, p int64) pool.Window {
			return pool.Window{Off: r.Pool.Off + int(b.Phys(p))*b.PageBytes, Len: b.PageBytes}
		}
		for ri, r := range c.Rooms {
			for _, s := range r.Src {
				src = append(src, page(b.Src, s))
			}
			for _, p := range c.PhysPages(ri) {
				dst = append(dst, page(b.Dst, p))
			}
		}
	}
	if err := t.lazyPrefill.Materialize(src); err != nil {
		return err
	}
	return t.lazyDecode.Materialize(dst)
}

// release gives back every materialized page of both arenas, on a lazily
// filled target whose pools hold their backgrounds (after reset).
func (t *Target) release() error {
	if t.lazyPrefill == nil || t.lazyDecode == nil {
		return nil
	}
	for _, side := range []struct {
		lazy arena.Lazy
		plan pool.Geometry
	}{{t.lazyPrefill, t.pPlan}, {t.lazyDecode, t.dPlan}} {
		for _, r := range side.plan.Regions {
			if err := side.lazy.Release(r.Span()); err != nil {
				return err
			}
		}
	}
	return nil
}
