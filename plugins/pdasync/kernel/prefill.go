package kernel

import (
	"context"

	"github.com/kvharness/kvharness/harness/sdk"
	"github.com/kvharness/kvharness/harness/sdk/pdasync"
)

// prefill is the prefill server's engine: the rooms it posted, and the
// notifications it has not yet raised.
type prefill struct {
	a       *pdasync.PrefillAttach
	itemLen []int
	rooms   []*sendRoom
}

type sendRoom struct {
	id    uint64
	comps []*sendComp
}

type sendComp struct {
	id      uint32
	handles []*sendHandle
	told    bool
}

type sendHandle struct {
	x     *pdasync.Xfer
	state pdasync.XferState
	told  bool
}

// Post implements pdasync.Prefill: every handle at once, each with the
// descriptors of its pages in every buffer of its component.
func (p *prefill) Post(_ context.Context, room pdasync.Room, src, dst []int64) ([]pdasync.Posted, error) {
	r := &sendRoom{id: room.ID}
	var out []pdasync.Posted
	for _, c := range room.Components {
		sc := &sendComp{id: c.ID}
		for _, h := range c.Handles {
			ds := p.descriptors(room.ID, c.Buffers, h, src, dst)
			x, err := p.a.Post(h.ID, ds)
			if err != nil {
				return nil, err
			}
			sc.handles = append(sc.handles, &sendHandle{x: x})
			out = append(out, pdasync.Posted{Handle: h.ID, Descriptors: ds})
		}
		r.comps = append(r.comps, sc)
	}
	p.rooms = append(p.rooms, r)
	return out, nil
}

// descriptors builds a handle's copies: buffer by buffer, a descriptor per
// run of its pages contiguous on both sides.
func (p *prefill) descriptors(room uint64, bufs []int, h pdasync.Handle, src, dst []int64) []sdk.Descriptor {
	var out []sdk.Descriptor
	for _, bi := range bufs {
		b, n := p.a.Buffers[bi], p.itemLen[bi]
		end := h.FirstPage + h.Pages
		for i := h.FirstPage; i < end; {
			s, d := b.Phys(src[i]), b.Phys(dst[i])
			run := 1
			for i+run < end && b.Phys(src[i+run]) == s+int64(run) && b.Phys(dst[i+run]) == d+int64(run) {
				run++
			}
			out = append(out, sdk.Descriptor{Room: room, Buffer: bi, Src: b.Src.Base + p.offset(s, n), Dst: b.Dst.Base + p.offset(d, n),
				Length: run * n, ItemLen: n, Run: run})
			i += run
		}
	}
	return out
}

// offset is page q's byte offset in a pool of n-byte pages; under
// offset-int32 computed in 32 bits, as int32 page × int32 item_len.
func (p *prefill) offset(q int64, n int) int {
	if p.a.Variant == OffsetInt32 {
		return int(int32(q) * int32(n))
	}
	return int(q) * n
}

// Poll implements pdasync.Prefill: a notification for every handle that
// ended since the last poll, then one for every component all of whose
// handles have.
func (p *prefill) Poll(context.Context) ([]pdasync.Notification, error) {
	var out []pdasync.Notification
	for _, r := range p.rooms {
		for _, c := range r.comps {
			ns, err := p.pollComponent(r.id, c)
			if err != nil {
				return nil, err
			}
			out = append(out, ns...)
		}
	}
	return out, nil
}

func (p *prefill) pollComponent(room uint64, c *sendComp) ([]pdasync.Notification, error) {
	var out []pdasync.Notification
	ended, failed := true, false
	for _, h := range c.handles {
		if !h.told {
			st, err := p.state(h.x)
			if err != nil {
				return nil, err
			}
			if st != pdasync.XferPending {
				h.state, h.told = st, true
				out = append(out, pdasync.Notification{Room: room, Component: c.id, Handle: h.x.Handle, Note: handleNote(st)})
			}
		}
		ended = ended && h.told
		failed = failed || h.state == pdasync.XferFailed
	}
	if ended && !c.told {
		c.told = true
		note := pdasync.NoteComponentDone
		if failed {
			note = pdasync.NoteComponentFailed
		}
		out = append(out, pdasync.Notification{Room: room, Component: c.id, Note: note})
	}
	return out, nil
}

// state is where a handle is. Under poll-as-completion a poll that
// answers without error counts as done, though the transfer has only
// started; under failure-unreported a failed handle stays pending.
func (p *prefill) state(x *pdasync.Xfer) (pdasync.XferState, error) {
	st, err := x.State()
	switch {
	case err == nil && st == pdasync.XferPending && p.a.Variant == PollAsCompletion:
		st = pdasync.XferDone
	case err == nil && st == pdasync.XferFailed && p.a.Variant == FailureUnreported:
		st = pdasync.XferPending
	}
	return st, err
}

func handleNote(st pdasync.XferState) pdasync.Note {
	if st == pdasync.XferFailed {
		return pdasync.NoteHandleFailed
	}
	return pdasync.NoteHandleDone
}
