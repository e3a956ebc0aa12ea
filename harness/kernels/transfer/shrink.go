package transfer

import (
	"slices"

	"github.com/kvharness/kvharness/harness/pd"
	"github.com/kvharness/kvharness/harness/workload"
)

// Shrink returns smaller variants of a failing transfer case, most
// aggressive first: fewer rooms, fewer layers and buffers, fewer and
// shorter page lists, smaller page numbers, a smaller pool, simpler room
// ids. Every variant is valid when c is, and each is strictly smaller in
// one of those measures, so repeated shrinking ends. The property runner
// keeps the first variant that still fails the same property.
func Shrink(c *Case) []*Case {
	var out []*Case
	out = append(out, shrinkRooms(c)...)
	out = append(out, shrinkBuffers(c)...)
	out = append(out, shrinkPageLists(c)...)
	out = append(out, shrinkPageNumbers(c)...)
	out = append(out, shrinkPool(c)...)
	out = append(out, shrinkIDs(c)...)
	return out
}

func shrinkRooms(c *Case) []*Case {
	var out []*Case
	if len(c.Rooms) < 2 {
		return nil
	}
	for i := range c.Rooms {
		out = append(out, withRooms(c, []int{i}))
	}
	if len(c.Rooms) > 2 {
		for i := range c.Rooms {
			out = append(out, withRooms(c, workload.Without(workload.Indices(len(c.Rooms)), i)))
		}
	}
	return out
}

func withRooms(c *Case, keep []int) *Case {
	x := c.Clone()
	rooms := x.Rooms
	x.Rooms = nil
	for _, i := range keep {
		x.Rooms = append(x.Rooms, rooms[i])
	}
	return x
}

// shrinkBuffers drops layers, then single buffers: a bug that needs two
// buffers (a shared allocation, two page tables) keeps both.
func shrinkBuffers(c *Case) []*Case {
	var out []*Case
	if layers := c.Geometry.Layers(); len(layers) > 1 {
		for _, l := range layers {
			out = append(out, withBuffers(c, func(b pd.Buffer) bool { return b.Layer == l }))
			out = append(out, withBuffers(c, func(b pd.Buffer) bool { return b.Layer != l }))
		}
	}
	if len(c.Geometry.Buffers) > 1 {
		for _, b := range c.Geometry.Buffers {
			name := b.Name
			out = append(out, withBuffers(c, func(x pd.Buffer) bool { return x.Name == name }))
			out = append(out, withBuffers(c, func(x pd.Buffer) bool { return x.Name != name }))
		}
	}
	return out
}

func withBuffers(c *Case, keep func(pd.Buffer) bool) *Case {
	x := c.Clone()
	x.Geometry.Buffers = slices.DeleteFunc(x.Geometry.Buffers, func(b pd.Buffer) bool { return !keep(b) })
	return x
}

// shrinkPageLists keeps one page pair, half the pairs, or all but one, of
// one room at a time.
func shrinkPageLists(c *Case) []*Case {
	var out []*Case
	for i, r := range c.Rooms {
		m := len(r.Src)
		if m < 2 {
			continue
		}
		all := workload.Indices(m)
		keeps := [][]int{{0}, {m - 1}, all[:m/2], all[m/2:], all[:m-1]}
		if m <= 16 {
			for j := 1; j < m-1; j++ {
				keeps = append(keeps, workload.Without(all, j))
			}
		}
		for _, k := range keeps {
			out = append(out, withPairs(c, i, k))
		}
	}
	return out
}

func withPairs(c *Case, room int, keep []int) *Case {
	x := c.Clone()
	r := &x.Rooms[room]
	src, dst := r.Src, r.Dst
	r.Src, r.Dst = nil, nil
	for _, j := range keep {
		r.Src, r.Dst = append(r.Src, src[j]), append(r.Dst, dst[j])
	}
	return x
}

// shrinkPageNumbers moves single pages toward 0 on either side, to a page
// no room of that side owns: to 0, then by half the way, a quarter, an
// eighth… and by one. A page whose bug holds over a band (a 32-bit offset
// wraps past 2 GiB of a far pool: every page above one fails alike)
// gallops to the band's edge in a few dozen steps instead of halving past
// it and walking back by ones.
func shrinkPageNumbers(c *Case) []*Case {
	var out []*Case
	taken := [2]map[int64]bool{{}, {}}
	for _, r := range c.Rooms {
		for j := range r.Src {
			taken[0][r.Src[j]], taken[1][r.Dst[j]] = true, true
		}
	}
	for i, r := range c.Rooms {
		for side, pages := range [2][]int64{r.Src, r.Dst} {
			for j, p := range pages {
				for _, to := range pageSteps(p) {
					if to >= 0 && to < p && !taken[side][to] {
						out = append(out, withPage(c, i, side, j, to))
					}
				}
			}
		}
	}
	return out
}

// pageSteps are the pages a shrinker tries for page p, most aggressive
// first: 0, then p less half of it, a quarter, and so on down to p-1.
func pageSteps(p int64) []int64 {
	out := []int64{0}
	for d := p / 2; d >= 1; d /= 2 {
		out = append(out, p-d)
	}
	if out[len(out)-1] != p-1 {
		out = append(out, p-1)
	}
	return out
}

func withPage(c *Case, room, side, j int, to int64) *Case {
	x := c.Clone()
	if side == 0 {
		x.Rooms[room].Src[j] = to
	} else {
		x.Rooms[room].Dst[j] = to
	}
	return x
}

// shrinkPool cuts the pools to the pages in use (at least two), folding
// each page table's shift into the smaller pool.
func shrinkPool(c *Case) []*Case {
	var pages [][]int64
	for _, r := range c.Rooms {
		pages = append(pages, r.Src, r.Dst)
	}
	return pd.ShrinkPool(c, func(x *Case) *pd.Geometry { return &x.Geometry }, pages...)
}

// shrinkIDs renumbers rooms 0, 1, 2…
func shrinkIDs(c *Case) []*Case {
	return pd.ShrinkIDs(c, func(x *Case) []Room { return x.Rooms }, func(r *Room) *uint64 { return &r.ID })
}
