package pdasync

import (
	"context"
	"fmt"
	"math"
	"time"

	"github.com/kvharness/kvharness/harness/protocol/kvpb"
	"github.com/kvharness/kvharness/harness/sdk"
)

// AsyncAdmit gives the decode engine a room and answers the destination
// pages it chose.
func (s *server) AsyncAdmit(ctx context.Context, req *kvpb.AsyncAdmitRequest) (*kvpb.AsyncAdmitResponse, error) {
	return onRole(s, "AsyncAdmit", kvpb.AsyncRole_ASYNC_ROLE_DECODE, func(st *asyncState) (*kvpb.AsyncAdmitResponse, error) {
		table, err := pageTable(req.PageTable, st.pages())
		if err != nil {
			return nil, err
		}
		virt, err := pageList("virtual page", req.VirtualPages, len(table))
		if err != nil {
			return nil, err
		}
		room, err := st.room(req.GetRoom(), len(virt), math.MaxInt)
		if err != nil {
			return nil, err
		}
		dst, err := st.dec.Admit(ctx, room, virt, table)
		if err != nil {
			return nil, engineFailed("Admit", err)
		}
		out := &kvpb.AsyncAdmitResponse{}
		for _, p := range dst {
			if p < 0 {
				return nil, engineFailed("Admit", fmt.Errorf("destination page %d is negative", p))
			}
			out.DstPages = append(out.DstPages, uint64(p))
		}
		return out, nil
	})
}

// AsyncPost has the prefill engine post a room's handles and answers their
// descriptors.
func (s *server) AsyncPost(ctx context.Context, req *kvpb.AsyncPostRequest) (*kvpb.AsyncPostResponse, error) {
	return onRole(s, "AsyncPost", kvpb.AsyncRole_ASYNC_ROLE_PREFILL, func(st *asyncState) (*kvpb.AsyncPostResponse, error) {
		if len(req.SrcPages) != len(req.DstPages) {
			return nil, sdk.BadRequest("post: %d source and %d destination pages", len(req.SrcPages), len(req.DstPages))
		}
		src, err := pageList("source page", req.SrcPages, st.pages())
		if err != nil {
			return nil, err
		}
		dst, err := pageList("destination page", req.DstPages, st.pages())
		if err != nil {
			return nil, err
		}
		room, err := st.room(req.GetRoom(), len(src), st.staging.Len/4)
		if err != nil {
			return nil, err
		}
		posted, err := st.pre.Post(ctx, room, src, dst)
		if err != nil {
			return nil, engineFailed("Post", err)
		}
		out := &kvpb.AsyncPostResponse{}
		for _, p := range posted {
			ds, err := sdk.DescriptorsProto(p.Descriptors)
			if err != nil {
				return nil, err
			}
			out.Handles = append(out.Handles, &kvpb.AsyncHandleDescriptors{Handle: p.Handle, Descriptors: ds})
		}
		return out, nil
	})
}

// AsyncPoll answers the prefill engine's notifications since the last poll.
func (s *server) AsyncPoll(ctx context.Context, req *kvpb.AsyncPollRequest) (*kvpb.AsyncPollResponse, error) {
	return onRole(s, "AsyncPoll", kvpb.AsyncRole_ASYNC_ROLE_PREFILL, func(st *asyncState) (*kvpb.AsyncPollResponse, error) {
		ns, settled, err := st.poll(ctx, time.Duration(req.WaitUs)*time.Microsecond)
		if err != nil {
			return nil, engineFailed("Poll", err)
		}
		return &kvpb.AsyncPollResponse{Notifications: notificationsPB(ns), Settled: new(settled)}, nil
	})
}

// poll polls the engine until it has notifications or wait has passed, or
// until a poll finds none though the transport was quiet before it (every
// opened handle had ended: the engine saw all there is to see, and
// waiting longer shows nothing new). settled says the last poll was such
// a one.
func (st *asyncState) poll(ctx context.Context, wait time.Duration) (ns []Notification, settled bool, err error) {
	deadline := time.Now().Add(wait)
	pause := 2 * time.Microsecond
	for {
		if st.t != nil {
			if settled, err = st.t.quiet(); err != nil {
				return nil, false, err
			}
		}
		ns, err = st.pre.Poll(ctx)
		if err != nil || len(ns) > 0 || settled || !time.Now().Before(deadline) || ctx.Err() != nil {
			return ns, settled, err
		}
		time.Sleep(min(pause, time.Until(deadline)))
		pause = min(2*pause, 50*time.Microsecond)
	}
}

// AsyncNotify delivers notifications to the decode engine and answers its
// events.
func (s *server) AsyncNotify(ctx context.Context, req *kvpb.AsyncNotifyRequest) (*kvpb.AsyncNotifyResponse, error) {
	return onRole(s, "AsyncNotify", kvpb.AsyncRole_ASYNC_ROLE_DECODE, func(st *asyncState) (*kvpb.AsyncNotifyResponse, error) {
		ns := make([]Notification, len(req.Notifications))
		for i, n := range req.Notifications {
			if n.Note < NoteHandleDone || n.Note > NoteComponentFailed {
				return nil, sdk.BadRequest("notification %d: note %v", i, n.Note)
			}
			ns[i] = Notification{Room: n.Room, Component: n.Component, Handle: n.Handle, Note: n.Note}
		}
		evs, err := st.dec.Notify(ctx, ns)
		if err != nil {
			return nil, engineFailed("Notify", err)
		}
		return &kvpb.AsyncNotifyResponse{Events: eventsPB(evs)}, nil
	})
}

// AsyncAbort aborts a room at the decode engine and answers its events.
func (s *server) AsyncAbort(ctx context.Context, req *kvpb.AsyncAbortRequest) (*kvpb.AsyncAbortResponse, error) {
	return onRole(s, "AsyncAbort", kvpb.AsyncRole_ASYNC_ROLE_DECODE, func(st *asyncState) (*kvpb.AsyncAbortResponse, error) {
		evs, err := st.dec.Abort(ctx, req.Room)
		if err != nil {
			return nil, engineFailed("Abort", err)
		}
		return &kvpb.AsyncAbortResponse{Events: eventsPB(evs)}, nil
	})
}

// pages is the page count every buffer has.
func (st *asyncState) pages() int {
	n := math.MaxInt
	for _, b := range st.buffers {
		n = min(n, b.Pages())
	}
	return n
}

// pageList converts pages that must each be below limit.
// pageTable is an admission's page table: as sent, or the identity over
// the pool's pages when it is empty.
func pageTable(ps []uint64, pages int) ([]int64, error) {
	if len(ps) > 0 {
		return pageList("page table entry", ps, pages)
	}
	out := make([]int64, pages)
	for i := range out {
		out[i] = int64(i)
	}
	return out, nil
}

func pageList(what string, ps []uint64, limit int) ([]int64, error) {
	out := make([]int64, len(ps))
	for i, p := range ps {
		if p >= uint64(limit) {
			return nil, sdk.BadRequest("%s %d (#%d) outside 0..%d", what, p, i, limit-1)
		}
		out[i] = int64(p)
	}
	return out, nil
}

// room checks a room's plan: at least one component, buffers that exist,
// handles of at least one page inside the room's pages, and gates (ids)
// below gates.
func (st *asyncState) room(r *kvpb.AsyncRoom, pages, gates int) (Room, error) {
	if r == nil || len(r.Components) == 0 || pages == 0 {
		return Room{}, sdk.BadRequest("room: want a plan with at least one component and one page")
	}
	out := Room{ID: r.Id}
	for _, c := range r.Components {
		comp := Component{ID: c.Id}
		for _, b := range c.Buffers {
			if int(b) >= len(st.buffers) {
				return Room{}, sdk.BadRequest("room %d component %d: buffer %d of %d", r.Id, c.Id, b, len(st.buffers))
			}
			comp.Buffers = append(comp.Buffers, int(b))
		}
		for _, h := range c.Handles {
			if h.Pages == 0 || uint64(h.FirstPage)+uint64(h.Pages) > uint64(pages) || int(h.Id) >= gates {
				return Room{}, sdk.BadRequest("room %d handle %d: pages [%d,+%d) of %d, gate %d of %d", r.Id, h.Id, h.FirstPage, h.Pages, pages, h.Id, gates)
			}
			comp.Handles = append(comp.Handles, Handle{ID: h.Id, FirstPage: int(h.FirstPage), Pages: int(h.Pages)})
		}
		out.Components = append(out.Components, comp)
	}
	return out, nil
}

func notificationsPB(ns []Notification) []*kvpb.AsyncNotification {
	out := make([]*kvpb.AsyncNotification, len(ns))
	for i, n := range ns {
		out[i] = &kvpb.AsyncNotification{Room: n.Room, Component: n.Component, Handle: n.Handle, Note: n.Note}
	}
	return out
}

func eventsPB(evs []Event) []*kvpb.AsyncEvent {
	out := make([]*kvpb.AsyncEvent, len(evs))
	for i, e := range evs {
		out[i] = &kvpb.AsyncEvent{Room: e.Room, Kind: e.Kind, Digests: e.Digests}
	}
	return out
}
