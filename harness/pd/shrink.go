package pd

import (
	"fmt"
	"math/rand"
)

// Fits checks g, and that one pool's tokens fit in slots when slots is
// positive: what every pd case's Validate asks of its geometry first.
func (g Geometry) Fits(slots int) error {
	if err := g.Validate(); err != nil {
		return fmt.Errorf("geometry: %w", err)
	}
	if slots > 0 && g.Pages*g.PageSize > slots {
		return fmt.Errorf("%d pages of %d tokens exceed the %d slots of a pool", g.Pages, g.PageSize, slots)
	}
	return nil
}

// FitsRooms is Fits, then a count of rooms within 1..maxRooms: the
// start of every pd case's Validate.
func (g Geometry) FitsRooms(slots, rooms, maxRooms int) error {
	if err := g.Fits(slots); err != nil {
		return err
	}
	if rooms < 1 || rooms > maxRooms {
		return fmt.Errorf("%d rooms: want 1..%d", rooms, maxRooms)
	}
	return nil
}

// CutPool is g with its pools cut to the pages [0, used) (at least two),
// each buffer's page-table shift folded into the smaller pool; false when
// that is no smaller than g.
func (g Geometry) CutPool(used int64) (Geometry, bool) {
	pages := max(int(used), 2)
	if pages >= g.Pages {
		return g, false
	}
	x := g.Clone()
	x.Pages = pages
	for i := range x.Buffers {
		x.Buffers[i].Shift %= pages
	}
	return x, true
}

// Sequential reports whether ids are 0, 1, 2…: the room ids a shrinker
// renumbers to.
func Sequential(ids []uint64) bool {
	for i, id := range ids {
		if id != uint64(i) {
			return false
		}
	}
	return true
}

// NewID draws a room id (top bit clear) not yet in ids, and adds it.
func NewID(rng *rand.Rand, ids map[uint64]bool) uint64 {
	for {
		id := rng.Uint64() >> 1
		if !ids[id] {
			ids[id] = true
			return id
		}
	}
}

// DiffSpan returns the first and last index where a and b differ (first
// is len(a) when they do not).
func DiffSpan(a, b []byte) (int, int) {
	first, last := 0, len(a)-1
	for first < len(a) && a[first] == b[first] {
		first++
	}
	for last > first && a[last] == b[last] {
		last--
	}
	return first, last
}

// The shrink steps the pd kinds (transfer, pdasync) share: their cases
// differ, but both carry a geometry and rooms of pages with ids. Each step
// makes at most one variant, a clone of c, and none when it would not be
// smaller.

// ShrinkPool cuts c's pools to the pages in use (at least two): the clone
// of c whose geometry, reached through geometry, is cut to one more than
// the highest page of pages (CutPool).
func ShrinkPool[C interface{ Clone() C }](c C, geometry func(C) *Geometry, pages ...[]int64) []C {
	used := int64(1)
	for _, list := range pages {
		for _, p := range list {
			used = max(used, p+1)
		}
	}
	g, ok := geometry(c).CutPool(used)
	if !ok {
		return nil
	}
	x := c.Clone()
	*geometry(x) = g
	return []C{x}
}

// ShrinkIDs renumbers the rooms of c, reached through rooms, 0, 1, 2…:
// the clone of c with each room's id (reached through id) its index.
func ShrinkIDs[C interface{ Clone() C }, R any](c C, rooms func(C) []R, id func(*R) *uint64) []C {
	rs := rooms(c)
	ids := make([]uint64, len(rs))
	for i := range rs {
		ids[i] = *id(&rs[i])
	}
	if Sequential(ids) {
		return nil
	}
	x := c.Clone()
	rs = rooms(x)
	for i := range rs {
		*id(&rs[i]) = uint64(i)
	}
	return []C{x}
}

// MaxShrinkGeometries bounds the geometries one shrink opens targets
// for: a candidate over a geometry of its own costs a new arena, planned,
// filled and attached (tens to hundreds of milliseconds), where one over
// the case's geometry costs a run.
const MaxShrinkGeometries = 16

// Incremental orders a shrinker's candidates for a case over geometry g,
// keeping each group's order: those over g first (they reuse its target),
// then those over another geometry: over ones in opened (the geometries
// the shrink has opened targets for; the system adds each as it opens
// it), and over at most MaxShrinkGeometries - len(opened) new ones. A
// shrink thus opens at most MaxShrinkGeometries arenas, counting those
// it tries, not those it offers (a step that drops one of three buffers
// stays open after many offered geometries went untried), and tries
// every cheaper step before a costly one. Of the others, those over a
// smaller pool go first: once a pool is cut to the pages in use, every
// arena the rest of the shrink opens is as small (a 256-page pool of six
// D=576 buffers took seconds an arena).
func Incremental[C any](cands []C, g Geometry, geometryOf func(C) Geometry, opened map[string]bool) []C {
	key := g.Key()
	fresh := map[string]bool{}
	var same, cut, other []C
	for _, c := range cands {
		x := geometryOf(c)
		k := x.Key()
		keep := func(c C) {
			if x.Pages < g.Pages {
				cut = append(cut, c)
			} else {
				other = append(other, c)
			}
		}
		switch {
		case k == key:
			same = append(same, c)
		case opened[k] || fresh[k]:
			keep(c)
		case len(opened)+len(fresh) < MaxShrinkGeometries:
			fresh[k] = true
			keep(c)
		}
	}
	return append(append(same, cut...), other...)
}
