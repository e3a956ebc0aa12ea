package pdasync

import (
	"fmt"
	"io"
	"strings"

	"github.com/kvharness/kvharness/harness/pd"
)

// Bounds that keep a hand-edited or hostile case from asking for an absurd
// run: rooms, handles (one gate each) and steps.
const (
	MaxRooms      = 64
	MaxComponents = 8
	MaxHandles    = 256
	MaxSteps      = 512
)

// Case is one adversarial run of an asynchronous transfer: the memory
// (the geometry, the same on both sides), the decode's page table, the
// rooms with their transfer plans, and the schedule the harness plays.
//
// Rooms without a predecessor are admitted and posted before the first
// step; a room with one (After) is admitted the moment its predecessor's
// pages come back: it reuses them. Then the steps run, in order, and the
// harness drains: it opens every gate still held and delivers every
// notification still withheld until nothing moves.
type Case struct {
	Geometry pd.Geometry `json:"geometry"`
	// PageTable maps the decode's virtual pages to physical ones; empty
	// means the identity (no compaction happened).
	PageTable []int64 `json:"page_table,omitempty"`
	Rooms     []Room  `json:"rooms"`
	Steps     []Step  `json:"steps"`
}

// Room is one request moving from prefill to decode: its i-th page is
// prefill page Src[i] and decode virtual page Virt[i], in every buffer
// (each buffer maps pages through its own page table as well).
type Room struct {
	ID   uint64  `json:"id"`
	Src  []int64 `json:"src"`
	Virt []int64 `json:"virt"`
	// After is the index of the room whose pages this one reuses: it is
	// admitted when they come back. Nil for a room admitted at the start.
	After      *int        `json:"after,omitempty"`
	Components []Component `json:"components"`
}

// Component is one sender of a room (a prefill rank, a group of
// buffers): its buffers and the handles that carry them. Handles split
// the room's pages into consecutive ranges, in order.
type Component struct {
	Buffers []int    `json:"buffers"` // indices into Geometry.Buffers
	Handles []Handle `json:"handles"`
}

// Handle is one transfer request: the room's pages [First, First+Pages)
// in every buffer of its component.
type Handle struct {
	First int `json:"first"`
	Pages int `json:"pages"`
}

// HandleRef names a handle by room, component and position.
type HandleRef struct{ Room, Comp, K int }

func (h HandleRef) String() string { return fmt.Sprintf("h%d.%d.%d", h.Room, h.Comp, h.K) }

// Clone returns a deep copy.
func (c *Case) Clone() *Case {
	x := &Case{Geometry: c.Geometry.Clone(), PageTable: append([]int64(nil), c.PageTable...),
		Rooms: make([]Room, len(c.Rooms)), Steps: append([]Step(nil), c.Steps...)}
	for i, r := range c.Rooms {
		x.Rooms[i] = r.clone()
	}
	return x
}

func (r Room) clone() Room {
	x := Room{ID: r.ID, Src: append([]int64(nil), r.Src...), Virt: append([]int64(nil), r.Virt...)}
	if r.After != nil {
		a := *r.After
		x.After = &a
	}
	for _, c := range r.Components {
		x.Components = append(x.Components, Component{Buffers: append([]int(nil), c.Buffers...), Handles: append([]Handle(nil), c.Handles...)})
	}
	return x
}

// Phys is virtual page v's physical page.
func (c *Case) Phys(v int64) int64 {
	if len(c.PageTable) == 0 {
		return v
	}
	return c.PageTable[v]
}

// PhysPages is room ri's physical decode pages, in room order.
func (c *Case) PhysPages(ri int) []int64 {
	out := make([]int64, len(c.Rooms[ri].Virt))
	for i, v := range c.Rooms[ri].Virt {
		out[i] = c.Phys(v)
	}
	return out
}

// Handles lists every handle in gate order: room by room, component by
// component. A handle's gate is its index here.
func (c *Case) Handles() []HandleRef {
	var out []HandleRef
	for ri, r := range c.Rooms {
		for ci, comp := range r.Components {
			for k := range comp.Handles {
				out = append(out, HandleRef{ri, ci, k})
			}
		}
	}
	return out
}

// Handle returns the handle h names.
func (c *Case) Handle(h HandleRef) Handle { return c.Rooms[h.Room].Components[h.Comp].Handles[h.K] }

// Moved counts the pages the page table moves.
func (c *Case) Moved() int {
	n := 0
	for v, p := range c.PageTable {
		if int64(v) != p {
			n++
		}
	}
	return n
}

// Successors counts the rooms admitted after another.
func (c *Case) Successors() int {
	n := 0
	for _, r := range c.Rooms {
		if r.After != nil {
			n++
		}
	}
	return n
}

// String implements workload.Case: e.g. "3 rooms (1 reusing pages), 7
// handles, 9 steps, 17 pages moved by the page table".
func (c *Case) String() string {
	s := fmt.Sprintf("%d rooms", len(c.Rooms))
	if n := c.Successors(); n > 0 {
		s += fmt.Sprintf(" (%d reusing pages)", n)
	}
	s += fmt.Sprintf(", %d handles, %d steps", len(c.Handles()), len(c.Steps))
	if n := c.Moved(); n > 0 {
		s += fmt.Sprintf(", %d pages moved by the page table", n)
	}
	return s
}

// Describe implements workload.Case: the geometry, the page table, each
// room's pages and plan, and the steps.
func (c *Case) Describe(w io.Writer, indent string) {
	g := c.Geometry
	fmt.Fprintf(w, "%spdasync transfer of %d rooms over %s\n", indent, len(c.Rooms), g)
	for _, b := range g.Buffers {
		fmt.Fprintf(w, "%s  buffer %-12s %s D=%d%s\n", indent, b.Name, b.Layout, b.HeadDim, shiftNote(b))
	}
	if n := c.Moved(); n > 0 {
		fmt.Fprintf(w, "%s  page table: %d of %d decode pages moved (compacted): %s\n", indent, n, g.Pages, pd.PageList(c.PageTable, 16))
	}
	const maxRooms = 8
	for i := range c.Rooms {
		if i == maxRooms {
			fmt.Fprintf(w, "%s  … %d more rooms in the repro file\n", indent, len(c.Rooms)-i)
			break
		}
		c.describeRoom(w, indent+"  ", i)
	}
	fmt.Fprintf(w, "%s  steps: %s\n", indent, StepList(c.Steps, 24))
}

func (c *Case) describeRoom(w io.Writer, indent string, i int) {
	r := c.Rooms[i]
	after := ""
	if r.After != nil {
		after = fmt.Sprintf(", reusing room %d's pages", *r.After)
	}
	fmt.Fprintf(w, "%sroom %d (id %d%s): %d pages, src %s → virt %s = phys %s\n", indent, i, r.ID, after, len(r.Src),
		pd.PageList(r.Src, 12), pd.PageList(r.Virt, 12), pd.PageList(c.PhysPages(i), 12))
	for ci, comp := range r.Components {
		var names, hs []string
		for _, b := range comp.Buffers {
			names = append(names, c.Geometry.Buffers[b].Name)
		}
		for k, h := range comp.Handles {
			hs = append(hs, fmt.Sprintf("%s pages [%d,%d)", HandleRef{i, ci, k}, h.First, h.First+h.Pages))
		}
		fmt.Fprintf(w, "%s  component %d {%s}: %s\n", indent, ci, strings.Join(names, " "), strings.Join(hs, ", "))
	}
}

func shiftNote(b pd.Buffer) string {
	if b.Shift == 0 {
		return ""
	}
	return fmt.Sprintf(" (page table: +%d)", b.Shift)
}
