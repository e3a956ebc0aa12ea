package pdasync

import (
	"slices"

	"github.com/kvharness/kvharness/harness/pd"
	"github.com/kvharness/kvharness/harness/workload"
)

// Shrink returns smaller variants of a failing case, most aggressive
// first: fewer rooms, fewer steps, fewer components and handles, fewer
// pages and buffers, the identity page table, a smaller pool, simpler room
// ids. Only valid variants are returned, and each is strictly smaller in
// one of those measures, so repeated shrinking ends. The property runner
// keeps the first that still fails the same property.
func Shrink(c *Case) []*Case {
	var out []*Case
	for _, f := range []func(*Case) []*Case{shrinkRooms, shrinkSteps, shrinkComponents, shrinkHandles, shrinkPages,
		shrinkBuffers, shrinkTable, shrinkPool, shrinkIDs} {
		for _, x := range f(c) {
			if x.Validate(0) == nil {
				out = append(out, x)
			}
		}
	}
	return out
}

// shrinkRooms drops one room: its steps go, later rooms are renumbered,
// and a room that waited for it waits for what it waited for.
func shrinkRooms(c *Case) []*Case {
	if len(c.Rooms) < 2 {
		return nil
	}
	var out []*Case
	for i := range c.Rooms {
		out = append(out, withoutRoom(c, i))
	}
	return out
}

func withoutRoom(c *Case, i int) *Case {
	x := c.Clone()
	after := x.Rooms[i].After
	x.Rooms = slices.Delete(x.Rooms, i, i+1)
	for k := range x.Rooms {
		a := x.Rooms[k].After
		switch {
		case a == nil:
		case *a == i:
			x.Rooms[k].After = after
		case *a > i:
			*a--
		}
	}
	room := func(r int) (int, bool) {
		if r == i {
			return 0, false
		}
		if r > i {
			r--
		}
		return r, true
	}
	x.Steps = workload.FilterMap(x.Steps, func(s Step) (Step, bool) {
		var ok bool
		switch s.Op {
		case OpRelease, OpFail:
			s.Handle.Room, ok = room(s.Handle.Room)
		case OpAbort:
			s.Room, ok = room(s.Room)
		case OpDeliver:
			if s.Room == AllRooms {
				return s, true
			}
			s.Room, ok = room(s.Room)
		default:
			ok = true
		}
		return s, ok
	})
	return x
}

// shrinkSteps drops the first or second half of the steps, then each
// step.
func shrinkSteps(c *Case) []*Case {
	n := len(c.Steps)
	if n == 0 {
		return nil
	}
	var out []*Case
	if n > 1 {
		out = append(out, withSteps(c, c.Steps[n/2:]), withSteps(c, c.Steps[:n/2]))
	}
	for i := range c.Steps {
		out = append(out, withSteps(c, slices.Delete(slices.Clone(c.Steps), i, i+1)))
	}
	return out
}

func withSteps(c *Case, steps []Step) *Case {
	x := c.Clone()
	x.Steps = slices.Clone(steps)
	return x
}

// shrinkComponents merges a component into the one before it: its
// buffers join, its handles and their steps go.
func shrinkComponents(c *Case) []*Case {
	var out []*Case
	for ri, r := range c.Rooms {
		for ci := 1; ci < len(r.Components); ci++ {
			x := c.Clone()
			comps := x.Rooms[ri].Components
			comps[ci-1].Buffers = append(comps[ci-1].Buffers, comps[ci].Buffers...)
			slices.Sort(comps[ci-1].Buffers)
			x.Rooms[ri].Components = slices.Delete(comps, ci, ci+1)
			x.Steps = workload.FilterMap(x.Steps, renumber(ri, ci))
			out = append(out, x)
		}
	}
	return out
}

// renumber drops steps of room ri's component ci and renumbers its later
// components.
func renumber(ri, ci int) func(Step) (Step, bool) {
	return func(s Step) (Step, bool) {
		comp := &s.Comp
		switch s.Op {
		case OpRelease, OpFail:
			if s.Handle.Room != ri {
				return s, true
			}
			comp = &s.Handle.Comp
		case OpDeliver:
			if s.Room != ri {
				return s, true
			}
		default:
			return s, true
		}
		if *comp == ci {
			return s, false
		}
		if *comp > ci {
			*comp--
		}
		return s, true
	}
}

// shrinkHandles merges a handle into the one before it.
func shrinkHandles(c *Case) []*Case {
	var out []*Case
	for ri, r := range c.Rooms {
		for ci, comp := range r.Components {
			for k := 1; k < len(comp.Handles); k++ {
				x := c.Clone()
				hs := x.Rooms[ri].Components[ci].Handles
				hs[k-1].Pages += hs[k].Pages
				x.Rooms[ri].Components[ci].Handles = slices.Delete(hs, k, k+1)
				x.Steps = workload.FilterMap(x.Steps, func(s Step) (Step, bool) {
					h := &s.Handle
					if (s.Op == OpRelease || s.Op == OpFail) && h.Room == ri && h.Comp == ci && h.K >= k {
						if h.K == k {
							return s, false
						}
						h.K--
					}
					return s, true
				})
				out = append(out, x)
			}
		}
	}
	return out
}

// shrinkPages drops a room's last page: every component's last handle
// loses it, and a handle left empty goes with its steps.
func shrinkPages(c *Case) []*Case {
	var out []*Case
	for ri, r := range c.Rooms {
		if len(r.Src) < 2 {
			continue
		}
		x := c.Clone()
		room := &x.Rooms[ri]
		room.Src, room.Virt = room.Src[:len(room.Src)-1], room.Virt[:len(room.Virt)-1]
		for ci := range room.Components {
			hs := room.Components[ci].Handles
			last := len(hs) - 1
			if hs[last].Pages--; hs[last].Pages == 0 {
				room.Components[ci].Handles = hs[:last]
				x.Steps = workload.FilterMap(x.Steps, func(s Step) (Step, bool) {
					h := s.Handle
					return s, !((s.Op == OpRelease || s.Op == OpFail) && h.Room == ri && h.Comp == ci && h.K == last)
				})
			}
		}
		out = append(out, x)
	}
	return out
}

// shrinkBuffers drops one buffer (a component left without any goes, with
// its steps).
func shrinkBuffers(c *Case) []*Case {
	if len(c.Geometry.Buffers) < 2 {
		return nil
	}
	var out []*Case
	for b := range c.Geometry.Buffers {
		out = append(out, withoutBuffer(c, b))
	}
	return out
}

func withoutBuffer(c *Case, b int) *Case {
	x := c.Clone()
	x.Geometry.Buffers = slices.Delete(x.Geometry.Buffers, b, b+1)
	for ri := range x.Rooms {
		comps := x.Rooms[ri].Components
		for ci := len(comps) - 1; ci >= 0; ci-- {
			bufs := slices.DeleteFunc(comps[ci].Buffers, func(v int) bool { return v == b })
			for i := range bufs {
				if bufs[i] > b {
					bufs[i]--
				}
			}
			comps[ci].Buffers = bufs
			if len(bufs) == 0 {
				comps = slices.Delete(comps, ci, ci+1)
				x.Steps = workload.FilterMap(x.Steps, renumber(ri, ci))
			}
		}
		x.Rooms[ri].Components = comps
	}
	return x
}

// shrinkTable replaces the page table with the identity.
func shrinkTable(c *Case) []*Case {
	if len(c.PageTable) == 0 {
		return nil
	}
	x := c.Clone()
	x.PageTable = nil
	return []*Case{x}
}

// shrinkPool cuts the pools to the pages in use (at least two), when the
// page table is the identity.
func shrinkPool(c *Case) []*Case {
	if len(c.PageTable) > 0 {
		return nil
	}
	var pages [][]int64
	for _, r := range c.Rooms {
		pages = append(pages, r.Src, r.Virt)
	}
	return pd.ShrinkPool(c, func(x *Case) *pd.Geometry { return &x.Geometry }, pages...)
}

// shrinkIDs renumbers rooms 0, 1, 2…
func shrinkIDs(c *Case) []*Case {
	return pd.ShrinkIDs(c, func(x *Case) []Room { return x.Rooms }, func(r *Room) *uint64 { return &r.ID })
}
