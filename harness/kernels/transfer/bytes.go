package transfer

import (
	"bytes"
	"encoding/hex"
	"fmt"
	"slices"
	"sort"

	"github.com/kvharness/kvharness/harness/layout"
	"github.com/kvharness/kvharness/harness/oracle"
	"github.com/kvharness/kvharness/harness/pd"
	"github.com/kvharness/kvharness/harness/pool"
)

// checkBytes judges what the run left: every destination page of every
// room must hold its source page byte for byte, nothing else on the decode
// side may change (guards included), and nothing on the prefill side may
// change at all. It also computes the rooms' digests.
func (j *judge) checkBytes(src, dst []oracle.Delta) {
	for b := range j.tc.Buffers {
		j.checkSource(b, src[b])
		j.checkOutside(b, dst[b])
	}
	j.checkPages(dst)
}

// checkSource reports every changed prefill byte, one violation per page.
func (j *judge) checkSource(b int, d oracle.Delta) {
	buf := j.tc.Buffers[b]
	o := newOverlay(d)
	for _, sp := range byPage(d, buf.PageBytes) {
		v := NewViolation(SourceWrite)
		v.Buffer, v.SrcPage = buf.Name, sp.page
		v.Off, v.Len = sp.w.Off, sp.w.Len
		v.Want, v.Got = o.shown(buf.Src, buf.SrcSeed, sp.w)
		v = j.withDescriptor(v, j.writer(buf.Src.Pool.Off+sp.w.Off))
		v.Detail = "the prefill side changed (" + pd.RegionPart(buf, "src", buf.Src, buf.Src.Pool.Off+sp.w.Off) + "): a transfer only reads it"
		j.add(v)
	}
}

// checkOutside reports changed decode bytes outside the rooms' destination
// pages, one violation per page.
func (j *judge) checkOutside(b int, d oracle.Delta) {
	buf := j.tc.Buffers[b]
	o := newOverlay(d)
	for _, sp := range byPage(d, buf.PageBytes) {
		if _, ok := j.tc.dsts[b][sp.page]; ok && sp.w.Off >= 0 && sp.w.Off < buf.PagesLen() {
			continue // a destination page: checkPages judges it
		}
		v := NewViolation(Outside)
		v.Buffer, v.DstPage = buf.Name, sp.page
		v.Off, v.Len = sp.w.Off, sp.w.Len
		v.Want, v.Got = o.shown(buf.Dst, buf.DstSeed, sp.w)
		v = j.withDescriptor(v, j.writer(buf.Dst.Pool.Off+sp.w.Off))
		v.Detail = "changed, but " + pd.RegionPart(buf, "dst", buf.Dst, buf.Dst.Pool.Off+sp.w.Off) + " is no room's destination" + j.untranslated(b, sp.page)
		j.add(v)
	}
}

// untranslated says when a stray page is a room's destination page as the
// room numbers it, i.e. before this buffer's page table.
func (j *judge) untranslated(b int, page int64) string {
	buf := j.tc.Buffers[b]
	if buf.Shift == 0 {
		return ""
	}
	for ri, r := range j.tc.Case.Rooms {
		for i, p := range r.Dst {
			if p == page {
				return fmt.Sprintf(" (it is room %d's page %d untranslated: %s's page table puts that page at %d)", ri, i, buf.Name, buf.Phys(p))
			}
		}
	}
	return ""
}

// pageSpan is the changed bytes of a delta inside one page (or one
// page-sized stretch of a guard): from the first changed byte to the last.
type pageSpan struct {
	page int64
	w    pool.Window
}

// byPage groups a delta's changed bytes by page.
func byPage(d oracle.Delta, pageBytes int) []pageSpan {
	var out []pageSpan
	for _, w := range d.Windows {
		for off := w.Off; off < w.End(); {
			page, _ := layout.FloorDiv(off, pageBytes)
			end := min(w.End(), (page+1)*pageBytes)
			if n := len(out); n > 0 && out[n-1].page == int64(page) {
				out[n-1].w.Len = end - out[n-1].w.Off
			} else {
				out = append(out, pageSpan{int64(page), pool.Window{Off: off, Len: end - off}})
			}
			off = end
		}
	}
	return out
}

// overlay reads a region's bytes after a run: the background with the
// run's delta on top.
type overlay struct {
	d      oracle.Delta
	starts []int // offset of each window's bytes in d.Bytes
}

func newOverlay(d oracle.Delta) *overlay {
	o := &overlay{d: d, starts: make([]int, len(d.Windows))}
	at := 0
	for i, w := range d.Windows {
		o.starts[i] = at
		at += w.Len
	}
	return o
}

// apply writes the changed bytes of [off, off+len(buf)) into buf.
func (o *overlay) apply(buf []byte, off int) {
	ws := o.d.Windows
	end := off + len(buf)
	i := sort.Search(len(ws), func(i int) bool { return ws[i].End() > off })
	for ; i < len(ws) && ws[i].Off < end; i++ {
		lo, hi := max(ws[i].Off, off), min(ws[i].End(), end)
		copy(buf[lo-off:hi-off], o.d.Bytes[o.starts[i]+lo-ws[i].Off:])
	}
}

// shown returns the first oracle.MaxShown bytes of w: the background (want) and
// what the run left there (got).
func (o *overlay) shown(r pool.Region, seed uint64, w pool.Window) (want, got []byte) {
	want = r.Background(seed, w.Off, min(w.Len, oracle.MaxShown))
	got = append([]byte(nil), want...)
	o.apply(got, w.Off)
	return want, got
}

// pageBytes holds one page of each side for the page check, reused.
type pageBytes struct{ want, got, bg []byte }

// checkPages compares every destination page with its source page, room
// by room and buffer by buffer, and digests both sides.
func (j *judge) checkPages(dst []oracle.Delta) {
	overlays := make([]*overlay, len(dst))
	for b := range dst {
		overlays[b] = newOverlay(dst[b])
	}
	explained := 0
	for ri, r := range j.tc.Case.Rooms {
		for b, buf := range j.tc.Buffers {
			dg := pd.NewDigester(ri, r.ID, buf.Name, len(r.Src))
			pb := pageBytes{make([]byte, buf.PageBytes), make([]byte, buf.PageBytes), make([]byte, buf.PageBytes)}
			for i := range r.Src {
				j.readPage(buf, overlays[b], pb, buf.Phys(r.Src[i]), buf.Phys(r.Dst[i]))
				dg.Add(pb.want, pb.got)
				if !bytes.Equal(pb.want, pb.got) {
					j.add(j.pageViolation(ri, b, i, pb, explained < maxExplained))
					explained++
				}
			}
			d := dg.Done()
			j.digests = append(j.digests, d)
			if !d.Match() {
				j.add(checksumViolation(d))
			}
		}
	}
}

// maxExplained bounds the page violations whose content is searched for
// among the source pages: the search reads every source page.
const maxExplained = 16

// readPage fills pb with source page src (want), destination page dst as
// the run left it (got), and that page's background (bg).
func (j *judge) readPage(b pd.BufferPools, o *overlay, pb pageBytes, src, dst int64) {
	n := b.PageBytes
	pool.FillBackground(pb.want, b.SrcSeed, b.Src.GuardBefore.Len+int(src)*n)
	pool.FillBackground(pb.bg, b.DstSeed, b.Dst.GuardBefore.Len+int(dst)*n)
	copy(pb.got, pb.bg)
	o.apply(pb.got, int(dst)*n)
}

func (j *judge) pageViolation(ri, b, i int, pb pageBytes, explain bool) Violation {
	v := j.roomViolation(PageMismatch, ri, b, i)
	first, last := pd.DiffSpan(pb.want, pb.got)
	base := int(v.DstPage) * j.tc.Buffers[b].PageBytes
	v.Off, v.Len = base+first, last-first+1
	v.Want, v.Got = copyClip(pb.want[first:]), copyClip(pb.got[first:])
	k := j.writer(j.tc.Buffers[b].Dst.Pool.Off + base + first)
	v = j.withDescriptor(v, k)
	v.Detail = "the destination page differs from its source page: " + j.content(b, v.SrcPage, pb, first, explain)
	if k < 0 {
		v.Detail += "; no descriptor writes it"
	}
	return v
}

// content says what a wrong destination page holds instead.
func (j *judge) content(b int, src int64, pb pageBytes, first int, explain bool) string {
	switch {
	case bytes.Equal(pb.got, pb.bg):
		return "it was never written (it still holds the decode pool's background)"
	case first > 0 && bytes.Equal(pb.got[first:], pb.bg[first:]):
		return fmt.Sprintf("only its first %d of %d bytes were copied (a short copy: is item_len too small?)", first, len(pb.got))
	case first > 0:
		return fmt.Sprintf("its first %d of %d bytes are right", first, len(pb.got))
	}
	if explain {
		if q, ok := j.sourcePageHolding(b, pb.got); ok {
			return fmt.Sprintf("it holds source page %d, not %d", q, src)
		}
	}
	return "it holds bytes of no source page of this buffer"
}

// sourcePageHolding finds the source page of buffer b whose bytes got
// holds: any page of a pool of up to maxSearched pages, else (a far
// pool) the source pages the case names and their neighbours.
func (j *judge) sourcePageHolding(b int, got []byte) (int64, bool) {
	buf := j.tc.Buffers[b]
	page := make([]byte, buf.PageBytes)
	head := min(8, len(page))
	for _, q := range j.searched(buf) {
		pool.FillBackground(page[:head], buf.SrcSeed, buf.Src.GuardBefore.Len+int(q)*buf.PageBytes)
		if !bytes.Equal(page[:head], got[:head]) {
			continue
		}
		pool.FillBackground(page, buf.SrcSeed, buf.Src.GuardBefore.Len+int(q)*buf.PageBytes)
		if bytes.Equal(page, got) {
			return q, true
		}
	}
	return 0, false
}

// maxSearched is the largest pool whose every source page is searched
// for a wrong destination page's bytes.
const maxSearched = 1 << 16

// searched lists the physical source pages of buf a search reads.
func (j *judge) searched(buf pd.BufferPools) []int64 {
	var out []int64
	if buf.Pages <= maxSearched {
		for q := range int64(buf.Pages) {
			out = append(out, q)
		}
		return out
	}
	for _, r := range j.tc.Case.Rooms {
		for _, p := range r.Src {
			q := buf.Phys(p)
			for _, n := range []int64{q - 1, q, q + 1} {
				if n >= 0 && n < int64(buf.Pages) {
					out = append(out, n)
				}
			}
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// checksumViolation is the violation of a room whose digests differ.
func checksumViolation(d pd.RoomDigest) Violation {
	v := NewViolation(Checksum)
	v.Room, v.RoomID, v.Buffer = d.Room, d.RoomID, d.Buffer
	v.Want, _ = hex.DecodeString(d.Src)
	v.Got, _ = hex.DecodeString(d.Dst)
	v.Detail = fmt.Sprintf("a decode server verifying the room would reject it: the digest of its %d pages is %s on prefill, %s on decode",
		d.Pages, d.Src, d.Dst)
	return v
}

// copyClip keeps at most oracle.MaxShown bytes of b in a slice of its own: b is
// often a reused buffer or a window into a whole delta.
func copyClip(b []byte) []byte { return append([]byte(nil), oracle.Clip(b)...) }
