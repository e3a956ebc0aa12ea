package pdasync

import (
	"fmt"
	"slices"
)

// Validate implements the case check a repro file's reader runs. slots,
// when positive, bounds the tokens of one pool. Prefill pages are distinct
// over all rooms; decode pages are distinct between rooms that can be
// alive at once: two rooms may share a physical page only when one is
// admitted after the other, directly or through its predecessors.
func (c *Case) Validate(slots int) error {
	if err := c.Geometry.FitsRooms(slots, len(c.Rooms), MaxRooms); err != nil {
		return err
	}
	if err := c.validTable(); err != nil {
		return err
	}
	ids, src := map[uint64]bool{}, map[int64]int{}
	for i, r := range c.Rooms {
		if ids[r.ID] {
			return fmt.Errorf("room %d: id %d used twice", i, r.ID)
		}
		ids[r.ID] = true
		if err := c.validRoom(i, src); err != nil {
			return fmt.Errorf("room %d: %w", i, err)
		}
	}
	if n := len(c.Handles()); n > MaxHandles {
		return fmt.Errorf("%d handles: want at most %d (one gate each)", n, MaxHandles)
	}
	if err := c.validSharing(); err != nil {
		return err
	}
	return c.validSteps()
}

func (c *Case) validTable() error {
	if len(c.PageTable) == 0 {
		return nil
	}
	if len(c.PageTable) != c.Geometry.Pages {
		return fmt.Errorf("page table of %d entries for %d pages", len(c.PageTable), c.Geometry.Pages)
	}
	seen := make([]bool, c.Geometry.Pages)
	for v, p := range c.PageTable {
		if p < 0 || p >= int64(len(seen)) || seen[p] {
			return fmt.Errorf("page table: virtual page %d maps to %d; want a permutation of 0..%d", v, p, len(seen)-1)
		}
		seen[p] = true
	}
	return nil
}

func (c *Case) validRoom(i int, src map[int64]int) error {
	r := c.Rooms[i]
	m := len(r.Src)
	if m < 1 || len(r.Virt) != m {
		return fmt.Errorf("%d source and %d virtual pages; want the same number, at least 1", m, len(r.Virt))
	}
	if r.After != nil && (*r.After < 0 || *r.After >= i) {
		return fmt.Errorf("after room %d: want an earlier room", *r.After)
	}
	pages := int64(c.Geometry.Pages)
	for k, p := range r.Src {
		if p < 0 || p >= pages {
			return fmt.Errorf("source page %d outside 0..%d", p, pages-1)
		}
		if o, ok := src[p]; ok {
			return fmt.Errorf("source page %d already belongs to room %d", p, o)
		}
		src[p] = i
		if v := r.Virt[k]; v < 0 || v >= pages || slices.Contains(r.Virt[:k], v) {
			return fmt.Errorf("virtual page %d: outside 0..%d or twice in the room", v, pages-1)
		}
	}
	return c.validPlan(r)
}

// validPlan requires the components to split the buffers (each buffer in
// exactly one) and each component's handles to split the room's pages
// into consecutive ranges.
func (c *Case) validPlan(r Room) error {
	if len(r.Components) < 1 || len(r.Components) > MaxComponents {
		return fmt.Errorf("%d components: want 1..%d", len(r.Components), MaxComponents)
	}
	owner := make([]int, len(c.Geometry.Buffers))
	for ci, comp := range r.Components {
		if len(comp.Buffers) == 0 {
			return fmt.Errorf("component %d has no buffer", ci)
		}
		for _, b := range comp.Buffers {
			if b < 0 || b >= len(owner) || owner[b] != 0 {
				return fmt.Errorf("component %d: buffer %d unknown or in two components", ci, b)
			}
			owner[b] = ci + 1
		}
		next := 0
		for k, h := range comp.Handles {
			if h.First != next || h.Pages < 1 {
				return fmt.Errorf("component %d handle %d: pages [%d,+%d); want consecutive ranges from page 0", ci, k, h.First, h.Pages)
			}
			next += h.Pages
		}
		if next != len(r.Src) || len(comp.Handles) == 0 {
			return fmt.Errorf("component %d: handles cover %d of the room's %d pages", ci, next, len(r.Src))
		}
	}
	for b, o := range owner {
		if o == 0 {
			return fmt.Errorf("buffer %s is in no component", c.Geometry.Buffers[b].Name)
		}
	}
	return nil
}

// validSharing requires rooms that share a physical decode page to be
// ordered by their predecessors.
func (c *Case) validSharing() error {
	for b := range c.Rooms {
		pb := c.PhysPages(b)
		for a := range b {
			if !c.descends(b, a) && overlap(c.PhysPages(a), pb) {
				return fmt.Errorf("rooms %d and %d share decode pages, and neither waits for the other (set after)", a, b)
			}
		}
	}
	return nil
}

// descends reports whether room b is admitted after room a's pages came
// back: a is one of its predecessors.
func (c *Case) descends(b, a int) bool {
	for r := c.Rooms[b].After; r != nil; r = c.Rooms[*r].After {
		if *r == a {
			return true
		}
	}
	return false
}

func overlap(a, b []int64) bool {
	for _, p := range a {
		if slices.Contains(b, p) {
			return true
		}
	}
	return false
}

func (c *Case) validSteps() error {
	if len(c.Steps) > MaxSteps {
		return fmt.Errorf("%d steps: want at most %d", len(c.Steps), MaxSteps)
	}
	for i, s := range c.Steps {
		if err := c.validStep(s); err != nil {
			return fmt.Errorf("step %d %q: %w", i, s, err)
		}
	}
	return nil
}

func (c *Case) validStep(s Step) error {
	switch s.Op {
	case OpRelease, OpFail:
		h := s.Handle
		if h.Room < 0 || h.Room >= len(c.Rooms) || h.Comp < 0 || h.Comp >= len(c.Rooms[h.Room].Components) ||
			h.K < 0 || h.K >= len(c.Rooms[h.Room].Components[h.Comp].Handles) {
			return fmt.Errorf("no handle %s", h)
		}
	case OpDeliver:
		if s.Room == AllRooms {
			return nil
		}
		if s.Room < 0 || s.Room >= len(c.Rooms) || s.Comp < 0 || s.Comp >= len(c.Rooms[s.Room].Components) {
			return fmt.Errorf("no component %d of room %d", s.Comp, s.Room)
		}
	case OpAbort:
		if s.Room < 0 || s.Room >= len(c.Rooms) {
			return fmt.Errorf("no room %d", s.Room)
		}
	}
	return nil
}
