package transfer

import (
	"encoding/binary"
	"fmt"

	"github.com/kvharness/kvharness/harness/pd"
	"github.com/kvharness/kvharness/harness/workload"
)

// Fuzz bytes become a transfer case by the same rule as store cases:
// a stream of choices, zeros past the end, so every input is a valid case.
// The format, byte by byte:
//
//	buffers   ⌈n/8⌉   bit i keeps buffer i of the base geometry (none set: all)
//	rooms     1       1 + value mod maxRooms
//	per room: pairs 1 (1 + value mod maxPages), then per pair a source and a
//	          destination page choice
//
// A page choice is one byte selecting a rule — the lowest free page, the
// highest free page, the page a shifted page table wraps at, the page after
// this room's previous one (continuing a run), or a raw page (2 more bytes)
// — then moved to the next free page of its side, so pages are distinct by
// construction. When a side runs out of pages the case ends. Rooms are
// numbered 0, 1, 2…
const (
	pickLowest = iota
	pickHighest
	pickWrap
	pickNext
	pickRaw
	numPicks
)

// Decode turns fuzz bytes into a valid transfer case over a subset
// of base's buffers.
func Decode(data []byte, base pd.Geometry, maxRooms, maxPages int) *Case {
	s := workload.NewStream(data)
	c := &Case{Geometry: pickBuffers(s, base)}
	g := &Gen{Geometry: c.Geometry}
	src, dst := newFreePages(base.Pages), newFreePages(base.Pages)
	rooms := 1 + int(s.Byte())%maxRooms
	for i := range rooms {
		r := Room{ID: uint64(i)}
		for range 1 + int(s.Byte())%maxPages {
			if src.left == 0 || dst.left == 0 {
				break
			}
			sp := src.next(g.pick(s, src, r.Src))
			src.take(sp)
			dp := dst.next(g.pick(s, dst, r.Dst))
			dst.take(dp)
			r.Src, r.Dst = append(r.Src, sp), append(r.Dst, dp)
		}
		if len(r.Src) == 0 {
			break
		}
		c.Rooms = append(c.Rooms, r)
	}
	return c
}

func pickBuffers(s *workload.Stream, base pd.Geometry) pd.Geometry {
	g := base.Clone()
	n := len(base.Buffers)
	mask := s.Uint((n + 7) / 8)
	if mask&(1<<n-1) == 0 {
		return g
	}
	g.Buffers = g.Buffers[:0]
	for i, b := range base.Buffers {
		if mask&(1<<i) != 0 {
			g.Buffers = append(g.Buffers, b)
		}
	}
	return g
}

// pick applies one page-choice rule; the caller moves the result to a free
// page.
func (g *Gen) pick(s *workload.Stream, fp *freePages, room []int64) int64 {
	switch s.Byte() % numPicks {
	case pickLowest:
		return 0
	case pickHighest:
		return fp.highest()
	case pickWrap:
		return g.wrapEdge()
	case pickNext:
		if len(room) == 0 {
			return 0
		}
		return room[len(room)-1] + 1
	default:
		return int64(s.Uint(2))
	}
}

// highest returns the highest free page; there must be one.
func (f *freePages) highest() int64 {
	p := int64(len(f.taken) - 1)
	for f.taken[p] {
		p--
	}
	return p
}

// Encode is Decode's inverse for a case over a subset of
// base's buffers (in base order) whose rooms are numbered 0, 1, 2…, with at
// most maxRooms rooms of at most maxPages pages each: seed corpora are
// written with it.
func Encode(c *Case, base pd.Geometry, maxRooms, maxPages int) ([]byte, error) {
	mask, err := bufferMask(c.Geometry, base)
	if err != nil {
		return nil, err
	}
	if len(c.Rooms) > maxRooms {
		return nil, fmt.Errorf("%d rooms; the format holds at most %d", len(c.Rooms), maxRooms)
	}
	var b [8]byte
	binary.LittleEndian.PutUint64(b[:], mask)
	out := append([]byte(nil), b[:(len(base.Buffers)+7)/8]...)
	out = append(out, byte(len(c.Rooms)-1))
	for i, r := range c.Rooms {
		if r.ID != uint64(i) || len(r.Src) > maxPages {
			return nil, fmt.Errorf("room %d: id %d and %d pages; the format numbers rooms in order and holds at most %d pages", i, r.ID, len(r.Src), maxPages)
		}
		out = append(out, byte(len(r.Src)-1))
		for j := range r.Src {
			out = append(out, pickRaw, byte(r.Src[j]), byte(r.Src[j]>>8), pickRaw, byte(r.Dst[j]), byte(r.Dst[j]>>8))
		}
	}
	return out, nil
}

func bufferMask(g, base pd.Geometry) (uint64, error) {
	if g.Pages != base.Pages || g.PageSize != base.PageSize || len(base.Buffers) > 64 {
		return 0, fmt.Errorf("geometry %v is not a subset of %v", g, base)
	}
	var mask uint64
	j := 0
	for i, b := range base.Buffers {
		if j < len(g.Buffers) && g.Buffers[j] == b {
			mask |= 1 << i
			j++
		}
	}
	if j != len(g.Buffers) {
		return 0, fmt.Errorf("buffer %s is not one of the base geometry's, in its order", g.Buffers[j].Name)
	}
	return mask, nil
}
