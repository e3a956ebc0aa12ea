package transfer

import (
	"fmt"
	"io"
	"strings"

	"github.com/kvharness/kvharness/harness/pd"
)

// Room is one request moving from prefill to decode: its i-th page on the
// prefill side, Src[i], goes to Dst[i] on the decode side, in every buffer.
// Pages are logical: each buffer maps them through its own page table
// (Buffer.Phys).
type Room struct {
	ID  uint64  `json:"id"`
	Src []int64 `json:"src"`
	Dst []int64 `json:"dst"`
}

// Case is one transfer-kernel call: rooms whose pages move from the
// source pools to the destination pools of a geometry. The case carries
// its geometry, so a repro file replays on exactly the arena it failed on,
// and shrinking can drop layers and buffers.
type Case struct {
	Geometry pd.Geometry `json:"geometry"`
	Rooms    []Room      `json:"rooms"`
}

// Clone returns a deep copy.
func (t *Case) Clone() *Case {
	c := &Case{Geometry: t.Geometry.Clone(), Rooms: make([]Room, len(t.Rooms))}
	for i, r := range t.Rooms {
		c.Rooms[i] = Room{ID: r.ID, Src: append([]int64(nil), r.Src...), Dst: append([]int64(nil), r.Dst...)}
	}
	return c
}

// PageCount is the number of page pairs over all rooms.
func (t *Case) PageCount() int {
	n := 0
	for _, r := range t.Rooms {
		n += len(r.Src)
	}
	return n
}

// Validate implements Case. slots, when positive, bounds the tokens of one
// pool (Pages × PageSize). Pages must be distinct within a side over all
// rooms: two requests never own the same page.
func (t *Case) Validate(slots int) error {
	if err := t.Geometry.FitsRooms(slots, len(t.Rooms), pd.MaxTransferRooms); err != nil {
		return err
	}
	ids := map[uint64]bool{}
	src, dst := map[int64]int{}, map[int64]int{}
	for i, r := range t.Rooms {
		if ids[r.ID] {
			return fmt.Errorf("room %d: id %d used twice", i, r.ID)
		}
		ids[r.ID] = true
		if err := t.validRoom(i, src, dst); err != nil {
			return err
		}
	}
	return nil
}

func (t *Case) validRoom(i int, src, dst map[int64]int) error {
	r := t.Rooms[i]
	if len(r.Src) < 1 || len(r.Src) != len(r.Dst) {
		return fmt.Errorf("room %d: %d source and %d destination pages; want the same number, at least 1", i, len(r.Src), len(r.Dst))
	}
	if err := t.claim(i, pd.SideSrc, r.Src, src); err != nil {
		return err
	}
	return t.claim(i, pd.SideDst, r.Dst, dst)
}

// claim marks room i's pages of one side as taken, refusing pages out of
// range or owned by an earlier room.
func (t *Case) claim(i int, side string, pages []int64, owner map[int64]int) error {
	for _, p := range pages {
		if p < 0 || p >= int64(t.Geometry.Pages) {
			return fmt.Errorf("room %d: %s page %d outside 0..%d", i, side, p, t.Geometry.Pages-1)
		}
		if o, ok := owner[p]; ok {
			return fmt.Errorf("room %d: %s page %d already belongs to room %d", i, side, p, o)
		}
		owner[p] = i
	}
	return nil
}

// String implements Case: e.g. "2 rooms, 5 pages, 6 buffers: [3..5]→[9 1 2] [7]→[0]".
func (t *Case) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%d rooms, %d pages, %d buffers:", len(t.Rooms), t.PageCount(), len(t.Geometry.Buffers))
	const maxRooms = 4
	for i, r := range t.Rooms {
		if i == maxRooms {
			fmt.Fprintf(&b, " …(%d more)", len(t.Rooms)-i)
			break
		}
		fmt.Fprintf(&b, " %s→%s", pd.PageList(r.Src, 6), pd.PageList(r.Dst, 6))
	}
	return b.String()
}

// Describe implements Case: the geometry, then a line per room.
func (t *Case) Describe(w io.Writer, indent string) {
	g := t.Geometry
	fmt.Fprintf(w, "%stransfer of %d rooms over %s\n", indent, len(t.Rooms), g)
	for _, b := range g.Buffers {
		fmt.Fprintf(w, "%s  buffer %-12s %s D=%d%s\n", indent, b.Name, b.Layout, b.HeadDim, bufferNotes(b))
	}
	const maxRooms = 8
	for i, r := range t.Rooms {
		if i == maxRooms {
			fmt.Fprintf(w, "%s  … %d more rooms in the repro file\n", indent, len(t.Rooms)-i)
			break
		}
		fmt.Fprintf(w, "%s  room %d (id %d): %d pages, src %s → dst %s\n", indent, i, r.ID, len(r.Src),
			pd.PageList(r.Src, 24), pd.PageList(r.Dst, 24))
	}
}

func bufferNotes(b pd.Buffer) string {
	var s string
	if b.Alloc != "" {
		s += " (carved from allocation " + b.Alloc + ")"
	}
	if b.Shift != 0 {
		s += fmt.Sprintf(" (page table: +%d)", b.Shift)
	}
	return s
}
