package pdasync

import (
	"bytes"
	"fmt"
	"slices"

	"github.com/kvharness/kvharness/harness/oracle"
	"github.com/kvharness/kvharness/harness/pd"
	"github.com/kvharness/kvharness/harness/pool"
)

// landing judges bytes that landed on buffer b's page q.
func (r *run) landing(b int, q int64, recent []int, got []byte) {
	p := r.w.logical(b, q)
	var by, late, held []int
	for _, hi := range r.w.writers[pageKey{b, q}] {
		switch h := r.w.handles[hi]; {
		case slices.Contains(recent, hi):
			by = append(by, hi)
		case h.gate == gateHeld:
			held = append(held, hi)
		default:
			late = append(late, hi)
		}
	}
	if len(by) == 0 {
		r.stray(b, q, p, got, held, late)
		return
	}
	h := r.w.handles[by[0]]
	ri := h.ref.Room
	if r.w.owned(ri, p) {
		return
	}
	r.seen[pageKey{b, q}] = true
	if o, ok := r.w.ownedBefore(ri, p); ok {
		v := r.pageViolation(Stale, b, q, got)
		v.Room, v.RoomID, v.Handle = ri, r.c.Rooms[ri].ID, h.ref.String()
		v.Detail = fmt.Sprintf("handle %s (opened at %s) landed on the page in epoch %d; its room held the page in epoch %d (from %s), and now it belongs to %s",
			h.ref, h.setAt, r.w.page(p).epoch, o.epoch, o.at, r.w.describe(p))
		r.res.Add(v)
		return
	}
	v := r.pageViolation(Outside, b, q, got)
	v.Room, v.RoomID, v.Handle = ri, r.c.Rooms[ri].ID, h.ref.String()
	v.Detail = fmt.Sprintf("handle %s wrote the page, which is not one of its room's pages: it belongs to %s", h.ref, r.w.describe(p))
	r.res.Add(v)
}

// stray judges bytes no handle opened since the last read can have
// written.
func (r *run) stray(b int, q, p int64, got []byte, held, late []int) {
	r.seen[pageKey{b, q}] = true
	switch {
	case len(late) > 0:
		h := r.w.handles[late[0]]
		v := r.pageViolation(Completion, b, q, got)
		v.Room, v.RoomID, v.Handle = h.ref.Room, r.c.Rooms[h.ref.Room].ID, h.ref.String()
		v.Detail = fmt.Sprintf("handle %s's copy landed after the prefill had told the handle %v at %s: a copy still in flight after its completion", h.ref, h.told, h.tellAt)
		r.res.Add(v)
	case len(held) > 0:
		h := r.w.handles[held[0]]
		v := r.pageViolation(Outside, b, q, got)
		v.Handle = h.ref.String()
		v.Detail = fmt.Sprintf("bytes landed while the harness holds the gate of handle %s, the only copy that writes the page: the transport ignored its gate", h.ref)
		r.res.Add(v)
	default:
		v := r.pageViolation(Outside, b, q, got)
		v.Detail = fmt.Sprintf("the page changed, but no posted descriptor writes it (it belongs to %s); it now holds %s", r.w.describe(p), r.content(b, got))
		r.res.Add(v)
	}
}

// pageViolation starts a violation about buffer b's decode page q, with
// the page's first differing bytes against its last observed content.
func (r *run) pageViolation(k oracle.Kind, b int, q int64, got []byte) Violation {
	p := r.w.logical(b, q)
	v := r.violation(k)
	v.Buffer, v.Page, v.DstPage, v.Epoch = r.w.bufs[b].Name, p, q, r.w.page(p).epoch
	was := r.page(b, q)
	first, last := pd.DiffSpan(was, got)
	v.Off, v.Len = int(q)*r.w.bufs[b].PageBytes+first, last-first+1
	v.Want, v.Got = copyClip(was[first:]), copyClip(got[first:])
	return v
}

// content says what a decode page's bytes are.
func (r *run) content(b int, got []byte) string {
	bp := r.w.bufs[b]
	buf := make([]byte, len(got))
	for ri, room := range r.c.Rooms {
		for i, s := range room.Src {
			r.w.srcPage(buf, b, bp.Phys(s))
			if bytes.Equal(buf, got) {
				return fmt.Sprintf("room %d's page %d (source page %d)", ri, i, bp.Phys(s))
			}
		}
	}
	return "bytes of no room's source page"
}

// ready judges a room the decode read: every handle and component of it
// must have completed, and their notes reached the decode; every byte of
// its pages equals its source; the digests the decode computed too. Then
// the room is over: its pages come back at once.
func (r *run) ready(ri int, digests [][]byte) error {
	r.trace("the decode reads room %d", ri)
	if err := r.observe(nil); err != nil { // whatever landed since the last read landed without its handle being opened
		return err
	}
	if why := r.unfinished(ri); len(why) > 0 {
		v := r.roomViolation(EarlyRead, ri)
		v.Detail = "the decode read the room before it completed: " + joinClip(why, 3)
		r.res.Add(v)
	}
	r.checkBytes(ri)
	r.checkDigests(ri, digests)
	return r.finishRoom(ri, "read")
}

// unfinished lists what the room still lacked when it was read.
func (r *run) unfinished(ri int) []string {
	info := r.w.rooms[ri]
	var out []string
	if info.aborted != "" {
		out = append(out, "it was aborted at "+info.aborted)
	}
	for _, hi := range r.w.roomHandles(ri) {
		switch h := r.w.handles[hi]; {
		case h.gate == gateHeld:
			out = append(out, fmt.Sprintf("handle %s is still behind its gate (its copies have not run)", h.ref))
		case h.gate == gateFail:
			out = append(out, fmt.Sprintf("handle %s failed at %s", h.ref, h.setAt))
		case !h.delivered:
			out = append(out, fmt.Sprintf("handle %s's completion was not delivered to the decode", h.ref))
		}
	}
	for ci, d := range info.compDelivered {
		if !d {
			out = append(out, fmt.Sprintf("component %d's completion was not delivered to the decode", ci))
		}
	}
	return out
}

func joinClip(ss []string, n int) string {
	s := ""
	for i, x := range clip(ss, n) {
		if i > 0 {
			s += "; "
		}
		s += x
	}
	return s
}

// checkBytes compares each of the room's pages, in every buffer, with its
// source page.
func (r *run) checkBytes(ri int) {
	room, info := r.c.Rooms[ri], r.w.rooms[ri]
	for b, bp := range r.w.bufs {
		want := make([]byte, bp.PageBytes)
		for i, p := range info.phys {
			q := bp.Phys(p)
			r.w.srcPage(want, b, bp.Phys(room.Src[i]))
			got := r.page(b, q)
			if bytes.Equal(want, got) {
				continue
			}
			v := r.roomViolation(Bytes, ri)
			v.Buffer, v.Page, v.DstPage, v.Epoch = bp.Name, p, q, r.w.page(p).epoch
			first, last := pd.DiffSpan(want, got)
			v.Off, v.Len = int(q)*bp.PageBytes+first, last-first+1
			v.Want, v.Got = copyClip(want[first:]), copyClip(got[first:])
			v.Detail = fmt.Sprintf("the room's page %d differs from its source page %d: it holds %s", i, bp.Phys(room.Src[i]), r.holds(b, q, got))
			r.res.Add(v)
		}
	}
}

// holds says what a wrong page of a room holds.
func (r *run) holds(b int, q int64, got []byte) string {
	p := r.w.logical(b, q)
	buf := make([]byte, len(got))
	r.w.contentAt(buf, r.t.Seed, b, q, r.w.page(p).epoch-1)
	if bytes.Equal(buf, got) {
		return "what it held before the room took it: its copy never landed"
	}
	return r.content(b, got)
}

// checkDigests compares the decode's digests with the source's.
func (r *run) checkDigests(ri int, digests [][]byte) {
	room := r.c.Rooms[ri]
	if len(digests) != len(r.w.bufs) {
		v := r.roomViolation(Protocol, ri)
		v.Detail = fmt.Sprintf("the decode read the room with %d digests; want one per buffer (%d)", len(digests), len(r.w.bufs))
		r.res.Add(v)
		return
	}
	for b, bp := range r.w.bufs {
		var pages [][]byte
		for _, s := range room.Src {
			buf := make([]byte, bp.PageBytes)
			r.w.srcPage(buf, b, bp.Phys(s))
			pages = append(pages, buf)
		}
		if want := pd.Digest(pages...); !bytes.Equal(want, digests[b]) {
			v := r.roomViolation(Digest, ri)
			v.Buffer, v.Want, v.Got = bp.Name, want, digests[b]
			v.Detail = fmt.Sprintf("the decode read %x from the room's %d pages; the prefill sent %x", digests[b], len(room.Src), want)
			r.res.Add(v)
		}
	}
}

// finishRoom gives a room's pages back the moment the decode is done
// with them: no copy may still land in them. They are reassigned at once
// (the fill of a new epoch), and rooms waiting for them are admitted.
func (r *run) finishRoom(ri int, how string) error {
	info := r.w.rooms[ri]
	info.over = how
	r.checkReuse(ri, how)
	r.w.give(ri, r.at)
	if err := r.reassign(ri); err != nil {
		return err
	}
	for j, room := range r.c.Rooms {
		if room.After != nil && *room.After == ri && !r.w.rooms[j].admitted {
			if err := r.admit(j); err != nil {
				return err
			}
		}
	}
	return nil
}

// checkReuse reports every handle that can still land in the room's pages:
// one behind its gate, or opened and not yet told.
func (r *run) checkReuse(ri int, how string) {
	for hi, h := range r.w.handles {
		if h.ended() || !h.posted {
			continue
		}
		if b, p, ok := r.writesRoom(hi, ri); ok {
			bp := r.w.bufs[b]
			v := r.roomViolation(Reuse, ri)
			v.Handle, v.Buffer, v.Page, v.DstPage, v.Epoch = h.ref.String(), bp.Name, p, bp.Phys(p), r.w.page(p).epoch
			v.Detail = fmt.Sprintf("the room's pages came back (%s) while handle %s, which writes this page, %s", how, h.ref, gateWords(h))
			r.res.Add(v)
		}
	}
}

// writesRoom finds a page of room ri that handle hi writes.
func (r *run) writesRoom(hi, ri int) (int, int64, bool) {
	for b, bp := range r.w.bufs {
		for _, p := range r.w.rooms[ri].phys {
			if slices.Contains(r.w.writers[pageKey{b, bp.Phys(p)}], hi) {
				return b, p, true
			}
		}
	}
	return 0, 0, false
}

// reassign writes the new epoch's fill over the room's pages in every
// buffer, as the page's next owner would.
func (r *run) reassign(ri int) error {
	for _, p := range r.w.rooms[ri].phys {
		for b, bp := range r.w.bufs {
			q := bp.Phys(p)
			buf := r.page(b, q)
			pool.FillBackground(buf, fillSeed(r.t.Seed, b, p, r.w.page(p).epoch), 0)
			r.touched[pageKey{b, q}] = true
			if err := r.t.DecodeMem().WriteAt(buf, bp.Dst.Pool.Off+int(q)*bp.PageBytes); err != nil {
				return err
			}
		}
	}
	return nil
}

// final checks what the run left: every room over, every page the run
// touched and no room holds as its last epoch made it (a page already
// reported is not reported again), the decode pools' guards and tails and
// the prefill arena unchanged. It then puts both arenas back as they were.
//
// A run that stopped early (a hung engine, a lie about completion) is not
// judged further: its copies may still be landing. Its gates are opened,
// so that nothing stays held; the next case's reset waits for them and
// restores both arenas whole.
func (r *run) final() error {
	if r.stop {
		r.t.clean = false
		return r.t.openAll()
	}
	if err := r.observe(nil); err != nil {
		return err
	}
	for ri, info := range r.w.rooms {
		if info.admitted && info.over == "" {
			v := r.roomViolation(Liveness, ri)
			v.Detail = "every gate is open and every notification delivered, yet the decode neither read the room nor freed its pages"
			r.res.Add(v)
		}
	}
	r.checkFree()
	dirty, err := r.checkEdges()
	if err != nil {
		return err
	}
	src, err := r.checkPrefill()
	if err != nil {
		return err
	}
	for k := range r.touched {
		bp := r.w.bufs[k.buffer]
		dirty = append(dirty, pool.Window{Off: bp.Dst.Pool.Off + int(k.page)*bp.PageBytes, Len: bp.PageBytes})
	}
	if err := r.t.DecodeMem().Reset(dirty); err != nil {
		return err
	}
	if err := r.t.PrefillMem().Reset(src); err != nil {
		return err
	}
	r.t.clean = true
	return nil
}

// checkFree compares every touched free page with its epoch's contents.
// An untouched page still holds what the run found there: the background.
func (r *run) checkFree() {
	for k := range r.touched {
		b, q := k.buffer, k.page
		bp := r.w.bufs[b]
		p := r.w.logical(b, q)
		if r.w.page(p).owner >= 0 || r.seen[k] {
			continue
		}
		want := make([]byte, bp.PageBytes)
		r.w.expected(want, r.t.Seed, b, q)
		got := r.page(b, q)
		if bytes.Equal(want, got) {
			continue
		}
		v := r.violation(Outside)
		v.Buffer, v.Page, v.DstPage, v.Epoch = bp.Name, p, q, r.w.page(p).epoch
		first, last := pd.DiffSpan(want, got)
		v.Off, v.Len = int(q)*bp.PageBytes+first, last-first+1
		v.Want, v.Got = copyClip(want[first:]), copyClip(got[first:])
		v.Detail = fmt.Sprintf("the page belongs to %s, but holds %s", r.w.describe(p), r.content(b, got))
		r.res.Add(v)
	}
}

// checkEdges requires each decode pool's guards and the tail past its
// last page unchanged, and returns the windows that changed.
func (r *run) checkEdges() ([]pool.Window, error) {
	var out []pool.Window
	for _, bp := range r.w.bufs {
		d := bp.Dst
		for _, w := range []pool.Window{d.GuardBefore, {Off: d.Pool.Off + bp.PagesLen(), Len: d.GuardAfter.End() - d.Pool.Off - bp.PagesLen()}} {
			ws, err := r.t.DecodeMem().Changed(w)
			if err != nil {
				return nil, err
			}
			for _, c := range ws {
				v := r.violation(Outside)
				v.Buffer, v.Off, v.Len = bp.Name, c.Off-d.Pool.Off, c.Len
				v.Detail = fmt.Sprintf("%s changed: no copy writes outside the pages", pd.RegionPart(bp, pd.SideDst, d, c.Off))
				r.res.Add(v)
			}
			out = append(out, ws...)
		}
	}
	return out, nil
}

// checkPrefill requires the prefill arena's pools unchanged (a transfer
// only reads them) and returns what changed.
func (r *run) checkPrefill() ([]pool.Window, error) {
	var out []pool.Window
	for _, bp := range r.w.bufs {
		ws, err := r.t.PrefillMem().Changed(bp.Src.Span())
		if err != nil {
			return nil, err
		}
		for _, w := range ws {
			v := r.violation(Outside)
			v.Buffer, v.Off, v.Len = bp.Name, w.Off-bp.Src.Pool.Off, w.Len
			v.Detail = fmt.Sprintf("the prefill arena changed (%s): a transfer only reads the source", pd.RegionPart(bp, pd.SideSrc, bp.Src, w.Off))
			r.res.Add(v)
		}
		out = append(out, ws...)
	}
	return out, nil
}

// copyClip keeps at most oracle.MaxShown bytes of b in a slice of its own.
func copyClip(b []byte) []byte { return append([]byte(nil), oracle.Clip(b)...) }
