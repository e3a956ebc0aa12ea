package pdasync

import (
	"bytes"
	"slices"

	"github.com/kvharness/kvharness/harness/pool"
)

// image is the decode pools as the run last observed them, page by page:
// every page of a dense pool; in a far one (a lazily filled target) the
// pages the case's rooms own, and any page a stray write reached since.
// A far pool of a quarter of a million pages then costs what a case
// names, and a copy anywhere else in it still shows: it allocates a hole
// of the arena's file (Target.strays).
type image struct {
	pages map[pageKey][]byte
	watch [][]int64 // per buffer, the physical pages compared, sorted
}

// watched lists, per buffer, the physical decode pages a run compares:
// all of them on a dense target, the rooms' pages on a far one.
func (r *run) watched() [][]int64 {
	out := make([][]int64, len(r.w.bufs))
	for b, bp := range r.w.bufs {
		if r.t.lazyDecode == nil {
			out[b] = make([]int64, bp.Pages)
			for q := range out[b] {
				out[b][q] = int64(q)
			}
			continue
		}
		for ri := range r.c.Rooms {
			for _, p := range r.c.PhysPages(ri) {
				out[b] = append(out[b], bp.Phys(p))
			}
		}
		slices.Sort(out[b])
		out[b] = slices.Compact(out[b])
	}
	return out
}

// readPools reads every watched decode page into an image of the run's
// own.
func (r *run) readPools() (*image, error) {
	im := &image{pages: map[pageKey][]byte{}, watch: r.watched()}
	for b, bp := range r.w.bufs {
		now, err := r.t.pages(b)
		if err != nil {
			return nil, err
		}
		n := bp.PageBytes
		for _, q := range im.watch[b] {
			im.pages[pageKey{b, q}] = append([]byte(nil), now[int(q)*n:int(q+1)*n]...)
		}
	}
	return im, nil
}

// page is buffer b's page q as last observed (or, on a page the run does
// not watch, what it holds untouched: its epoch's contents).
func (r *run) page(b int, q int64) []byte {
	k := pageKey{b, q}
	if pg, ok := r.image.pages[k]; ok {
		return pg
	}
	pg := make([]byte, r.w.bufs[b].PageBytes)
	r.w.expected(pg, r.t.Seed, b, q)
	r.image.pages[k] = pg
	return pg
}

// observe compares the decode pools with the image and judges every page
// that changed since: it must be written by a handle opened since
// (recent), on a page that handle's room owns in this epoch. On a far
// target the pages a stray write allocated join the watched ones first.
func (r *run) observe(recent []int) error {
	if err := r.watchStrays(); err != nil {
		return err
	}
	for b, bp := range r.w.bufs {
		now, err := r.t.pages(b)
		if err != nil {
			return err
		}
		n := bp.PageBytes
		for _, q := range r.image.watch[b] {
			got := now[int(q)*n : int(q+1)*n]
			if bytes.Equal(got, r.page(b, q)) {
				continue
			}
			got = append([]byte(nil), got...) // the page as it was read, whatever lands next
			r.landing(b, q, recent, got)
			copy(r.page(b, q), got)
			r.touched[pageKey{b, q}] = true
		}
	}
	return nil
}

// watchStrays adds to the watched pages every decode page a write
// reached though the harness left it a hole, with the contents it held
// until then: observe then judges what landed there as on any page.
func (r *run) watchStrays() error {
	if r.t.lazyDecode == nil {
		return nil
	}
	for b, bp := range r.w.bufs {
		pages := pool.Window{Off: bp.Dst.Pool.Off, Len: bp.PagesLen()}
		ws, err := r.t.lazyDecode.Strays(pages)
		if err != nil {
			return err
		}
		for _, w := range pool.Intersect(ws, pages) {
			first := int64(w.Off-pages.Off) / int64(bp.PageBytes)
			last := int64(w.End()-1-pages.Off) / int64(bp.PageBytes)
			for q := first; q <= last; q++ {
				if i, found := slices.BinarySearch(r.image.watch[b], q); !found {
					r.image.watch[b] = slices.Insert(r.image.watch[b], i, q)
					r.page(b, q) // its contents before the write: the run never touched it
				}
			}
		}
	}
	return nil
}
