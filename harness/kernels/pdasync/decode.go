package pdasync

import (
	"github.com/kvharness/kvharness/harness/pd"
	"github.com/kvharness/kvharness/harness/workload"
)

// Fuzz bytes become a case by a stream of choices, zeros past the end, so
// every input is a valid case over the base geometry. The format, byte by
// byte:
//
//	rooms      1   1 + value mod 3 rooms admitted at the start
//	table      1   value mod 3 = 0: the identity; else that many
//	               swaps follow (value mod 8), 2 bytes each
//	per room:  1   1 + value mod 4 pages, then per page a source and a
//	               virtual page (1 byte each: value mod pages, moved to
//	               the next free page of its side), then 1 byte of
//	               components (1 + value mod 3), 1 byte rotating the
//	               buffers among them, and per component 1 byte of handles
//	               (1 + value mod 3) and a byte per cut
//	successor  1   value mod 4 = 0: one more room after room (next byte
//	               mod rooms), reusing its first pages, then its pages
//	               and plan as above
//	steps      1   value mod 32 steps, each an op byte (mod 6: release,
//	               fail, poll, deliver, deliver all, abort) and its
//	               operands: a handle (1 byte, mod the handles), or a
//	               room, a component and what (1 byte each)
func Decode(data []byte, base pd.Geometry) *Case {
	s := workload.NewStream(data)
	c := &Case{Geometry: base.Clone()}
	pages := base.Pages
	rooms := 1 + int(s.Byte())%3
	c.PageTable = decodeTable(s, pages)
	src, virt := newFree(pages), newFree(pages)
	for i := range rooms {
		if src.left() == 0 || virt.left() == 0 {
			break
		}
		m := min(1+int(s.Byte())%4, src.left(), virt.left())
		sp, vp := make([]int64, m), make([]int64, m)
		for k := range m {
			sp[k], vp[k] = src.pick(s.Byte()), virt.pick(s.Byte())
		}
		c.Rooms = append(c.Rooms, decodeRoom(s, uint64(i), sp, vp, len(base.Buffers)))
	}
	if s.Byte()%4 == 0 && src.left() > 0 {
		prev := int(s.Byte()) % len(c.Rooms)
		pv := c.Rooms[prev].Virt
		m := min(1+int(s.Byte())%4, len(pv), src.left())
		sp := make([]int64, m)
		for k := range m {
			sp[k] = src.pick(s.Byte())
		}
		r := decodeRoom(s, uint64(len(c.Rooms)), sp, append([]int64(nil), pv[:m]...), len(base.Buffers))
		r.After = &prev
		c.Rooms = append(c.Rooms, r)
	}
	c.Steps = decodeSteps(s, c)
	return c
}

func decodeTable(s *workload.Stream, pages int) []int64 {
	n := int(s.Byte())
	if n%3 == 0 {
		return nil
	}
	t := make([]int64, pages)
	for i := range t {
		t[i] = int64(i)
	}
	for range n % 8 {
		i, j := int(s.Byte())%pages, int(s.Byte())%pages
		t[i], t[j] = t[j], t[i]
	}
	return t
}

// pick takes the free page at or after b mod the pool's pages.
func (f *free) pick(b byte) int64 {
	i := int(b) % len(f.pages)
	p := f.pages[i]
	f.pages = append(f.pages[:i], f.pages[i+1:]...)
	return p
}

func decodeRoom(s *workload.Stream, id uint64, src, virt []int64, nb int) Room {
	r := Room{ID: id, Src: src, Virt: virt}
	k := min(1+int(s.Byte())%3, nb)
	rot := int(s.Byte())
	r.Components = make([]Component, k)
	for b := range nb {
		ci := (b + rot) % k
		r.Components[ci].Buffers = append(r.Components[ci].Buffers, b)
	}
	m := len(src)
	for ci := range r.Components {
		n := min(1+int(s.Byte())%3, m)
		first := 0
		for h := range n {
			left := m - first - (n - h - 1) // pages this handle may take, leaving one for each after it
			size := left
			if h < n-1 {
				size = 1 + int(s.Byte())%left
			}
			r.Components[ci].Handles = append(r.Components[ci].Handles, Handle{First: first, Pages: size})
			first += size
		}
	}
	return r
}

func decodeSteps(s *workload.Stream, c *Case) []Step {
	hs := c.Handles()
	var out []Step
	for range int(s.Byte()) % 32 {
		switch s.Byte() % 6 {
		case 0:
			out = append(out, Release(hs[int(s.Byte())%len(hs)]))
		case 1:
			out = append(out, Fail(hs[int(s.Byte())%len(hs)]))
		case 2:
			out = append(out, Poll())
		case 3:
			ri := int(s.Byte()) % len(c.Rooms)
			ci := int(s.Byte()) % len(c.Rooms[ri].Components)
			out = append(out, Deliver(ri, ci, []What{DeliverAll, DeliverHandles, DeliverComponent}[s.Byte()%3]))
		case 4:
			out = append(out, DeliverEverything())
		default:
			out = append(out, Abort(int(s.Byte())%len(c.Rooms)))
		}
	}
	return out
}
