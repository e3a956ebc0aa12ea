package pdasync

import (
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/kvharness/kvharness/harness/oracle"
	"github.com/kvharness/kvharness/harness/pd"
	"github.com/kvharness/kvharness/harness/plugin"
	"github.com/kvharness/kvharness/harness/protocol/kvpb"
)

// planPB is room ri's transfer plan as both processes get it: handle ids
// are gates.
func (r *run) planPB(ri int) *kvpb.AsyncRoom {
	room := r.c.Rooms[ri]
	out := &kvpb.AsyncRoom{Id: room.ID}
	for ci, comp := range room.Components {
		c := &kvpb.AsyncComponent{Id: uint32(ci)}
		for _, b := range comp.Buffers {
			c.Buffers = append(c.Buffers, uint32(b))
		}
		for k, h := range comp.Handles {
			c.Handles = append(c.Handles, &kvpb.AsyncHandle{Id: uint32(r.w.byRef[HandleRef{ri, ci, k}]), FirstPage: uint32(h.First), Pages: uint32(h.Pages)})
		}
		out.Components = append(out.Components, c)
	}
	return out
}

// table is the decode's whole page table, built once a run; nil (the
// identity, which a far pool of a quarter of a million pages need not
// send at every admission) when the case has none.
func (r *run) table() []uint64 {
	if r.tbl != nil || len(r.c.PageTable) == 0 {
		return r.tbl
	}
	r.tbl = make([]uint64, r.c.Geometry.Pages)
	for v := range r.tbl {
		r.tbl[v] = uint64(r.c.Phys(int64(v)))
	}
	return r.tbl
}

// admit gives room ri to the decode, judges the pages it answers, and
// posts the room at the prefill with them, as a deployment's bootstrap
// does.
func (r *run) admit(ri int) error {
	room, info := r.c.Rooms[ri], r.w.rooms[ri]
	req := &kvpb.AsyncAdmitRequest{Room: r.planPB(ri), PageTable: r.table()}
	for _, v := range room.Virt {
		req.VirtualPages = append(req.VirtualPages, uint64(v))
	}
	resp, err := asyncAdmit(r.ctx, r.t.Decode, req)
	if err != nil {
		return err
	}
	info.admitted = true
	r.w.take(ri, r.at)
	if !r.judgeAdmit(ri, resp.DstPages) {
		info.broken, info.over = true, "broken"
		return nil
	}
	r.trace("admit r%d (id %d): the decode sends dst pages %s", ri, room.ID, pd.PageList(info.sent, 12))
	return r.post(ri)
}

// judgeAdmit checks the decode's pages against the room's physical pages
// (the page table applied); false when they cannot even be posted.
func (r *run) judgeAdmit(ri int, sent []uint64) bool {
	room, info := r.c.Rooms[ri], r.w.rooms[ri]
	if len(sent) != len(room.Virt) {
		v := r.roomViolation(Protocol, ri)
		v.Detail = fmt.Sprintf("the decode answered %d destination pages for the room's %d", len(sent), len(room.Virt))
		r.res.Add(v)
		return false
	}
	wrong, first, virtual := 0, -1, 0
	for i, p := range sent {
		if p >= uint64(r.c.Geometry.Pages) {
			v := r.roomViolation(PageMap, ri)
			v.Detail = fmt.Sprintf("the decode sent destination page %d, outside the pool's %d pages", p, r.c.Geometry.Pages)
			r.res.Add(v)
			return false
		}
		info.sent = append(info.sent, int64(p))
		if int64(p) != info.phys[i] {
			wrong++
			if first < 0 {
				first = i
			}
			if int64(p) == room.Virt[i] {
				virtual++
			}
		}
	}
	if wrong > 0 {
		v := r.roomViolation(PageMap, ri)
		v.Page = info.phys[first]
		v.Detail = fmt.Sprintf("the decode sent %d of the room's %d pages wrong: its page %d is virtual page %d, physical page %d through the page table, but it sent %d",
			wrong, len(sent), first, room.Virt[first], info.phys[first], sent[first])
		if virtual == wrong {
			v.Detail += " (it sent virtual indices as physical ones)"
		}
		r.res.Add(v)
	}
	return true
}

func (r *run) roomViolation(k oracle.Kind, ri int) Violation {
	v := r.violation(k)
	v.Room, v.RoomID = ri, r.c.Rooms[ri].ID
	return v
}

// post asks the prefill to post room ri's handles and judges the
// descriptors it answers.
func (r *run) post(ri int) error {
	room, info := r.c.Rooms[ri], r.w.rooms[ri]
	req := &kvpb.AsyncPostRequest{Room: r.planPB(ri)}
	for i := range room.Src {
		req.SrcPages = append(req.SrcPages, uint64(room.Src[i]))
		req.DstPages = append(req.DstPages, uint64(info.sent[i]))
	}
	resp, err := asyncPost(r.ctx, r.t.Prefill, req)
	if f := (*plugin.Fault)(nil); errors.As(err, &f) && f.Kind == plugin.Refused {
		// The room is valid: a prefill that cannot post it built
		// descriptors its transport refused (an address outside the
		// registered arenas). The run stops; its gates are opened.
		v := r.roomViolation(BadDescriptor, ri)
		v.Detail = "the prefill could not post the room: " + f.Detail
		r.res.Add(v)
		info.broken, info.over, r.stop = true, "broken", true
		return nil
	}
	if err != nil {
		return err
	}
	info.posted = true
	r.polled = false
	answered := map[int]bool{}
	mine := r.w.roomHandles(ri)
	for _, hd := range resp.Handles {
		hi := int(hd.Handle)
		if !slices.Contains(mine, hi) || answered[hi] {
			v := r.roomViolation(Protocol, ri)
			v.Detail = fmt.Sprintf("the prefill answered descriptors for gate %d twice or for a handle not of this room", hi)
			r.res.Add(v)
			continue
		}
		answered[hi] = true
		r.w.handles[hi].posted = true
		r.judgeDescriptors(ri, hi, descriptorsOf(hd.Descriptors))
	}
	for _, hi := range mine {
		if !answered[hi] {
			v := r.roomViolation(Protocol, ri)
			v.Handle = r.w.handles[hi].ref.String()
			v.Detail = "the prefill posted the room without this handle"
			r.res.Add(v)
		}
	}
	r.trace("post r%d: %d handles posted, every gate held", ri, len(answered))
	return nil
}

// maxField bounds the descriptor fields the oracle computes with.
const maxField = 1 << 40

func descriptorsOf(ds []*kvpb.Descriptor) []pd.Descriptor {
	sat := func(v uint64) int { return int(min(v, maxField)) }
	out := make([]pd.Descriptor, len(ds))
	for i, d := range ds {
		out[i] = pd.Descriptor{Room: d.Room, Buffer: int(d.Buffer), Src: sat(d.SrcOffset), Dst: sat(d.DstOffset),
			Length: sat(d.Length), ItemLen: sat(d.ItemLen), Run: sat(d.Run)}
	}
	return out
}

// poll collects the prefill's notifications (waiting up to wait for a
// first one), judges each against the gates, and withholds them on the
// wire.
func (r *run) poll(wait time.Duration) error {
	resp, err := asyncPoll(r.ctx, r.t.Prefill, wait)
	if err != nil {
		return err
	}
	r.polled = true
	r.settled = resp.Settled != nil && *resp.Settled
	for _, n := range resp.Notifications {
		r.judgeNote(n)
		r.queue = append(r.queue, n)
		r.trace("the prefill notifies %s", noteString(n))
	}
	return nil
}

func noteString(n *kvpb.AsyncNotification) string {
	switch n.Note {
	case kvpb.AsyncNote_ASYNC_NOTE_HANDLE_DONE:
		return fmt.Sprintf("room %d component %d handle (gate) %d done", n.Room, n.Component, n.Handle)
	case kvpb.AsyncNote_ASYNC_NOTE_HANDLE_FAILED:
		return fmt.Sprintf("room %d component %d handle (gate) %d failed", n.Room, n.Component, n.Handle)
	case kvpb.AsyncNote_ASYNC_NOTE_COMPONENT_DONE:
		return fmt.Sprintf("room %d component %d done", n.Room, n.Component)
	case kvpb.AsyncNote_ASYNC_NOTE_COMPONENT_FAILED:
		return fmt.Sprintf("room %d component %d failed", n.Room, n.Component)
	}
	return fmt.Sprintf("room %d: note %v", n.Room, n.Note)
}

// pick chooses the withheld notes a deliver step delivers, in the order
// they were raised.
func (r *run) pick(s Step) []*kvpb.AsyncNotification {
	var out []*kvpb.AsyncNotification
	for _, n := range r.queue {
		if s.Room == AllRooms || r.matches(n, s) {
			out = append(out, n)
		}
	}
	return out
}

func (r *run) matches(n *kvpb.AsyncNotification, s Step) bool {
	ri, ok := r.w.ids[n.Room]
	if !ok || ri != s.Room || int(n.Component) != s.Comp {
		return false
	}
	handle := isHandleNote(n.Note)
	return s.What == DeliverAll || (s.What == DeliverHandles) == handle
}

func isHandleNote(n kvpb.AsyncNote) bool {
	return n == kvpb.AsyncNote_ASYNC_NOTE_HANDLE_DONE || n == kvpb.AsyncNote_ASYNC_NOTE_HANDLE_FAILED
}

// deliver hands notes to the decode, takes them off the wire, and plays
// the events it answers.
func (r *run) deliver(ns []*kvpb.AsyncNotification) error {
	if len(ns) == 0 {
		return nil
	}
	ns = slices.Clone(ns) // ns may be the queue itself
	r.queue = slices.DeleteFunc(r.queue, func(n *kvpb.AsyncNotification) bool { return slices.Contains(ns, n) })
	for _, n := range ns {
		r.delivered(n)
	}
	r.trace("deliver %d notifications to the decode", len(ns))
	resp, err := asyncNotify(r.ctx, r.t.Decode, &kvpb.AsyncNotifyRequest{Notifications: ns})
	if err != nil {
		return err
	}
	return r.events(resp.Events)
}

// delivered records what the decode now knows.
func (r *run) delivered(n *kvpb.AsyncNotification) {
	ri, ok := r.w.ids[n.Room]
	if !ok || int(n.Component) >= len(r.w.rooms[ri].compDelivered) {
		return
	}
	if !isHandleNote(n.Note) {
		r.w.rooms[ri].compDelivered[n.Component] = true
		return
	}
	if hi := int(n.Handle); hi < len(r.w.handles) && r.w.handles[hi].ref.Room == ri {
		r.w.handles[hi].delivered = true
	}
}

// abort aborts room ri at the decode, if it is live.
func (r *run) abort(ri int) error {
	info := r.w.rooms[ri]
	if !info.posted || info.over != "" || info.aborted != "" {
		r.trace("skipped: room %d is not live", ri)
		return nil
	}
	info.aborted = r.at
	r.trace("abort r%d at the decode", ri)
	resp, err := asyncAbort(r.ctx, r.t.Decode, &kvpb.AsyncAbortRequest{Room: r.c.Rooms[ri].ID})
	if err != nil {
		return err
	}
	return r.events(resp.Events)
}

// events plays what the decode did: a read room is checked and finished
// (its pages come back at once), a freed room's pages come back.
func (r *run) events(evs []*kvpb.AsyncEvent) error {
	for _, e := range evs {
		ri, ok := r.w.ids[e.Room]
		if !ok || !r.w.rooms[ri].admitted || r.w.rooms[ri].over != "" {
			v := r.violation(Protocol)
			if ok {
				v.Room, v.RoomID = ri, e.Room
			}
			v.Detail = fmt.Sprintf("the decode answered %v for room id %d, which is not admitted or is already over", e.Kind, e.Room)
			r.res.Add(v)
			continue
		}
		var err error
		switch e.Kind {
		case kvpb.AsyncEventKind_ASYNC_EVENT_READY:
			err = r.ready(ri, e.Digests)
		case kvpb.AsyncEventKind_ASYNC_EVENT_FREED:
			r.trace("the decode frees room %d's pages", ri)
			err = r.finishRoom(ri, "freed")
		default:
			v := r.roomViolation(Protocol, ri)
			v.Detail = fmt.Sprintf("the decode answered event %v", e.Kind)
			r.res.Add(v)
		}
		if err != nil {
			return err
		}
	}
	return nil
}
