package sequence

import (
	"fmt"
	"math/bits"
	"slices"
)

// The shadow model is the ownership oracle's memory: for every live page
// its owner, its epoch, the step that allocated it, the bytes it must
// hold in each layer (and their digest), and for every slot the step that
// last wrote it legally. A freed page is don't-care until it is allocated
// again; then its bytes are taken as they are, so that anything landing
// in it afterwards that its new owner did not write is seen.

type tenure struct{ req, epoch, from, to int }

type pageState struct {
	owner, holders, epoch, since int
	want                         [][]byte   // per layer; nil while free
	sum                          []uint64   // per layer: digest of want
	last                         []int      // per slot: step of its last legal write, -1 none
	keys                         []rowKey   // per slot: the row its last legal write stored (zero: none)
	pastKeys                     [][]rowKey // per earlier tenure, oldest first: the rows it left, per slot
	history                      []tenure   // earlier owners, oldest first
	poisoned                     bool       // freed and filled with poison: it must hold it when taken again
}

type shadow struct {
	g     Geometry
	pages []pageState
	rows  map[uint64]rowKey // fingerprint of every row written → its key
	// pageBytes per layer
	pageBytes []int
	live      []uint64            // a bit per page held by some request: what the check reads
	digest    func([]byte) uint64 // a page's digest, as the check computes it where the pool lives
}

func newShadow(g Geometry, pageBytes []int) *shadow {
	n := g.Pages
	if g.Decode {
		n *= 2 // the decode side's pages follow
	}
	return &shadow{g: g, pages: make([]pageState, n), rows: map[uint64]rowKey{}, pageBytes: pageBytes,
		live: make([]uint64, (n+63)/64), digest: fingerprint}
}

// allocate gives page pg to req at step, its bytes as read now.
func (s *shadow) allocate(pg, req, step int, now [][]byte) {
	st := &s.pages[pg]
	if st.owner != 0 {
		st.history = append(st.history, tenure{st.owner, st.epoch, st.since, step})
	}
	st.owner, st.holders, st.since = req, 1, step
	s.live[pg/64] |= 1 << (pg % 64)
	st.epoch++
	st.want, st.sum = now, make([]uint64, len(now))
	for l := range now {
		st.sum[l] = s.digest(now[l])
	}
	if st.last == nil {
		st.last, st.keys = make([]int, s.g.PageSize), make([]rowKey, s.g.PageSize)
	}
	for i := range st.last {
		st.last[i], st.keys[i] = -1, rowKey{}
	}
}

// share adds a holder to page pg.
func (s *shadow) share(pg int) { s.pages[pg].holders++ }

// release drops a holder; the last one frees the page.
func (s *shadow) release(pg, step int) {
	st := &s.pages[pg]
	if st.holders--; st.holders > 0 {
		return
	}
	st.history = append(st.history, tenure{st.owner, st.epoch, st.since, step})
	st.owner, st.want, st.sum = 0, nil, nil
	st.pastKeys = append(st.pastKeys, slices.Clone(st.keys))
	s.live[pg/64] &^= 1 << (pg % 64)
	st.poisoned = true
}

// whileFree explains why layer l of free page pg, about to be allocated
// at step, holds got instead of the poison it was filled with when its
// last holder left: something wrote into it after its writer's epoch
// ended.
func (s *shadow) whileFree(step, l, pg int, got, poison []byte) Violation {
	st := &s.pages[pg]
	t := st.history[len(st.history)-1]
	first := 0
	for i := range poison {
		if poison[i] != got[i] {
			first = i
			break
		}
	}
	tok := s.pageBytes[l] / s.g.PageSize
	off := first / tok
	lo, hi := off*tok, (off+1)*tok
	v := Violation{Kind: Ownership, Step: step, Layer: l, Page: pg, Slot: s.g.Slot(pg, off), Owner: 0, Since: t.to, Epoch: t.epoch,
		Former: t.req, FormerUntil: t.to, LastWrite: -1, Off: lo, Len: tok,
		Want: slices.Clone(poison[lo:min(hi, lo+32)]), Got: slices.Clone(got[lo:min(hi, lo+32)])}
	holds := "bytes no step of this sequence wrote"
	if k, ok := s.rows[fingerprint(got[lo:hi])]; ok {
		v.Holds, holds = k.String(), k.String()+"'s row"
	}
	v.Detail = fmt.Sprintf("page %d, free since step %d (r%d's until then, epoch %d), taken again at step %d: slot %d was written while the page was free: holds %s",
		pg, t.to, t.req, t.epoch, step, v.Slot, holds)
	return v
}

// wrote records a legal write of row (its bytes per layer) at step.
func (s *shadow) wrote(w write, step int, row [][]byte) {
	st := &s.pages[w.Page]
	off := int(w.Slot) % s.g.PageSize
	for l, b := range row {
		copy(st.want[l][off*len(b):], b)
		s.rows[fingerprint(b)] = w.Key
	}
	st.last[off], st.keys[off] = step, w.Key
}

// copyPage records a legal copy of page src's bytes (all of them: a
// transfer moves whole pages) into page dst at step.
func (s *shadow) copyPage(src, dst, step int) {
	from, to := &s.pages[src], &s.pages[dst]
	for l := range to.want {
		copy(to.want[l], from.want[l])
	}
	for off, k := range from.keys {
		if k != (rowKey{}) {
			to.keys[off], to.last[off] = k, step
		}
	}
}

// seal recomputes the digests of the pages a step wrote.
func (s *shadow) seal(pages []int) {
	for _, pg := range pages {
		st := &s.pages[pg]
		for l := range st.want {
			st.sum[l] = s.digest(st.want[l])
		}
	}
}

// livePages lists the live pages, in order.
func (s *shadow) livePages() []int {
	var out []int
	s.each(func(pg int) error { out = append(out, pg); return nil })
	return out
}

// each calls f on every live page, in order.
func (s *shadow) each(f func(pg int) error) error {
	for w, word := range s.live {
		for word != 0 {
			b := bits.TrailingZeros64(word)
			word &^= 1 << b
			if err := f(w*64 + b); err != nil {
				return err
			}
		}
	}
	return nil
}

// formerOf is the tenure of page pg that request req held, the latest,
// or false.
func (s *shadow) formerOf(pg, req int) (tenure, bool) {
	h := s.pages[pg].history
	for i := len(h) - 1; i >= 0; i-- {
		if h[i].req == req {
			return h[i], true
		}
	}
	return tenure{}, false
}

// diff explains why layer l of page pg holds got instead of its bytes:
// the first wrong slot, whose row it holds, whose page it was.
func (s *shadow) diff(step, l, pg int, got []byte, wroteNow map[int64]rowKey) Violation {
	st := &s.pages[pg]
	want := st.want[l]
	tok := s.pageBytes[l] / s.g.PageSize
	first := 0
	for i := range want {
		if want[i] != got[i] {
			first = i
			break
		}
	}
	off := first / tok
	slot := s.g.Slot(pg, off)
	v := Violation{Step: step, Layer: l, Page: pg, Slot: slot, Owner: st.owner, Since: st.since, Epoch: st.epoch, LastWrite: st.last[off]}
	lo, hi := off*tok, (off+1)*tok
	v.Off, v.Len = lo, tok
	v.Want, v.Got = slices.Clone(want[lo:min(hi, lo+32)]), slices.Clone(got[lo:min(hi, lo+32)])
	owner := fmt.Sprintf("r%d's since step %d (epoch %d)", st.owner, st.since, st.epoch)
	if st.holders > 1 {
		owner = fmt.Sprintf("shared by %d requests, r%d's first, since step %d (epoch %d)", st.holders, st.owner, st.since, st.epoch)
	}
	last := "never written since it was allocated"
	if v.LastWrite >= 0 {
		last = fmt.Sprintf("last written legally at step %d", v.LastWrite)
	}
	holds := "bytes no step of this sequence wrote"
	if k, ok := s.rows[fingerprint(got[lo:hi])]; ok {
		v.Holds = k.String()
		holds = k.String() + "'s row"
		if k.Req != st.owner {
			if t, ok := s.formerOf(pg, k.Req); ok {
				v.Former, v.FormerUntil = t.req, t.to
				holds += fmt.Sprintf(" (r%d held this page from step %d until step %d, epoch %d)", t.req, t.from, t.to, t.epoch)
			} else {
				holds += fmt.Sprintf(" (r%d never held this page)", k.Req)
			}
		}
	}
	switch {
	case st.holders > 1:
		v.Kind = SharedWrite
	case hasKey(wroteNow, slot) && v.Holds == "":
		v.Kind = Missing
	default:
		v.Kind = Ownership
	}
	if v.Kind == Missing {
		v.Detail = fmt.Sprintf("page %d (%s), slot %d (token of this step's store): the row is not there; it holds %s", pg, owner, slot, holds)
	} else {
		v.Detail = fmt.Sprintf("page %d (%s), slot %d, %s: holds %s", pg, owner, slot, last, holds)
	}
	return v
}

func hasKey(m map[int64]rowKey, k int64) bool { _, ok := m[k]; return ok }
