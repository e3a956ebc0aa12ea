package kernel

import (
	"context"
	"crypto/sha256"
	"fmt"

	"github.com/kvharness/kvharness/harness/sdk/pdasync"
)

// decode is the decode server's engine: what it knows of each room.
type decode struct {
	a       *pdasync.DecodeAttach
	itemLen []int
	rooms   map[uint64]*recvRoom
}

// recvRoom is one room as the decode tracks it: the pages it chose, the
// notes received per handle and per component, and whether it was
// aborted or failed, and is over (read or freed).
type recvRoom struct {
	room    pdasync.Room
	dst     []int64
	handles map[uint32]pdasync.Note // 0 until a note came
	comps   map[uint32]pdasync.Note
	aborted bool
	failed  bool
	over    bool
}

// Admit implements pdasync.Decode: the room's pages through the page
// table (under virtual-as-physical, not).
func (d *decode) Admit(_ context.Context, room pdasync.Room, virt, table []int64) ([]int64, error) {
	if _, ok := d.rooms[room.ID]; ok {
		return nil, fmt.Errorf("room %d admitted twice", room.ID)
	}
	r := &recvRoom{room: room, handles: map[uint32]pdasync.Note{}, comps: map[uint32]pdasync.Note{}}
	for _, v := range virt {
		p := table[v]
		if d.a.Variant == VirtualAsPhysical {
			p = v
		}
		r.dst = append(r.dst, p)
	}
	for _, c := range room.Components {
		r.comps[c.ID] = 0
		for _, h := range c.Handles {
			r.handles[h.ID] = 0
		}
	}
	d.rooms[room.ID] = r
	return r.dst, nil
}

// Notify implements pdasync.Decode.
func (d *decode) Notify(_ context.Context, ns []pdasync.Notification) ([]pdasync.Event, error) {
	var out []pdasync.Event
	for _, n := range ns {
		r, ok := d.rooms[n.Room]
		if !ok {
			return nil, fmt.Errorf("notification for room %d, which was never admitted", n.Room)
		}
		ev, err := d.note(r, n)
		if err != nil {
			return nil, err
		}
		out = append(out, ev...)
	}
	return out, nil
}

// note records one notification and says what it changes for the room.
func (d *decode) note(r *recvRoom, n pdasync.Notification) ([]pdasync.Event, error) {
	switch n.Note {
	case pdasync.NoteHandleDone, pdasync.NoteHandleFailed:
		r.handles[n.Handle] = n.Note
	default:
		r.comps[n.Component] = n.Note
	}
	failed := n.Note == pdasync.NoteHandleFailed || n.Note == pdasync.NoteComponentFailed
	r.failed = r.failed || failed
	if failed && d.a.Variant == FirstFailureFrees && !r.over {
		return d.free(r), nil
	}
	return d.settle(r)
}

// Abort implements pdasync.Decode.
func (d *decode) Abort(_ context.Context, room uint64) ([]pdasync.Event, error) {
	r, ok := d.rooms[room]
	if !ok {
		return nil, fmt.Errorf("abort of room %d, which was never admitted", room)
	}
	r.aborted = true
	if d.a.Variant == AbortFreesInFlight && !r.over {
		return d.free(r), nil
	}
	return d.settle(r)
}

// settle reads a complete room, or frees an aborted or failed one once
// every handle has ended: only then can no copy land in its pages.
func (d *decode) settle(r *recvRoom) ([]pdasync.Event, error) {
	switch {
	case r.over:
		return nil, nil
	case r.aborted || r.failed:
		if r.ended() {
			return d.free(r), nil
		}
		return nil, nil
	case d.complete(r):
		return d.read(r)
	}
	return nil, nil
}

// ended reports whether every handle has a done or failed note.
func (r *recvRoom) ended() bool {
	for _, n := range r.handles {
		if n == 0 {
			return false
		}
	}
	return true
}

// complete reports whether every handle and every component is done.
// Under first-component-done, the first component's note is taken as the
// room's.
func (d *decode) complete(r *recvRoom) bool {
	if d.a.Variant == FirstComponentDone {
		for _, n := range r.comps {
			if n == pdasync.NoteComponentDone {
				return true
			}
		}
	}
	for _, n := range r.comps {
		if n != pdasync.NoteComponentDone {
			return false
		}
	}
	for _, n := range r.handles {
		if n != pdasync.NoteHandleDone {
			return false
		}
	}
	return true
}

func (d *decode) free(r *recvRoom) []pdasync.Event {
	r.over = true
	return []pdasync.Event{{Room: r.room.ID, Kind: pdasync.Freed}}
}

// read reads the room: the digest of each buffer's pages in room order.
func (d *decode) read(r *recvRoom) ([]pdasync.Event, error) {
	r.over = true
	ev := pdasync.Event{Room: r.room.ID, Kind: pdasync.Ready}
	for bi, b := range d.a.Buffers {
		n := d.itemLen[bi]
		h := sha256.New()
		for _, p := range r.dst {
			page, err := d.a.Read(b.Dst.Base+int(b.Phys(p))*n, n)
			if err != nil {
				return nil, fmt.Errorf("read room %d: %w", r.room.ID, err)
			}
			h.Write(page)
		}
		ev.Digests = append(ev.Digests, h.Sum(nil)[:8])
	}
	return []pdasync.Event{ev}, nil
}
