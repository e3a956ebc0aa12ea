package pdasync

import (
	"fmt"
	"slices"
	"strings"

	"github.com/kvharness/kvharness/harness/pd"
)

// pair is one page a handle sends: buffer b's source page to its
// destination page (each buffer's page table applied).
type pair struct {
	buffer   int
	src, dst int64
}

// judgeDescriptors checks the descriptors a handle posted: each must be a
// well-formed copy of whole pages of a buffer of its component (pd's
// checks), and together they must send each of the handle's page pairs
// (as the decode sent its pages) exactly once. Well-formed descriptors are
// indexed by the decode page they write, so that a landing names its
// writer.
func (r *run) judgeDescriptors(ri, hi int, ds []pd.Descriptor) {
	h := r.w.handles[hi]
	comp := r.c.Rooms[ri].Components[h.ref.Comp]
	want := r.pairs(ri, h.ref)
	got := map[pair]int{}
	var problems []string
	for k, d := range ds {
		if p := r.vet(ri, comp, d); len(p) > 0 {
			problems = append(problems, fmt.Sprintf("#%d %s: %s", k, d, strings.Join(p, "; ")))
			continue
		}
		b := r.w.bufs[d.Buffer]
		s0, d0 := int64((d.Src-b.Src.Pool.Off)/b.PageBytes), int64((d.Dst-b.Dst.Pool.Off)/b.PageBytes)
		for n := range int64(d.Run) {
			got[pair{d.Buffer, s0 + n, d0 + n}]++
			key := pageKey{d.Buffer, d0 + n}
			if !slices.Contains(r.w.writers[key], hi) {
				r.w.writers[key] = append(r.w.writers[key], hi)
			}
		}
	}
	problems = append(problems, r.coverage(want, got)...)
	if len(problems) == 0 {
		return
	}
	v := r.roomViolation(BadDescriptor, ri)
	v.Handle = h.ref.String()
	v.Detail = fmt.Sprintf("%d descriptors for %d page pairs: %s", len(ds), len(want), strings.Join(clip(problems, 4), "; "))
	r.res.Add(v)
}

// pairs lists a handle's page pairs, buffer by buffer.
func (r *run) pairs(ri int, h HandleRef) []pair {
	room, sent := r.c.Rooms[ri], r.w.rooms[ri].sent
	hd := r.c.Handle(h)
	var out []pair
	for _, b := range room.Components[h.Comp].Buffers {
		bp := r.w.bufs[b]
		for i := hd.First; i < hd.First+hd.Pages; i++ {
			out = append(out, pair{b, bp.Phys(room.Src[i]), bp.Phys(sent[i])})
		}
	}
	return out
}

// vet lists what is wrong with one descriptor of a component's handle.
func (r *run) vet(ri int, comp Component, d pd.Descriptor) []string {
	if !slices.Contains(comp.Buffers, d.Buffer) {
		return []string{fmt.Sprintf("names buffer %d, not one of its component's %v", d.Buffer, comp.Buffers)}
	}
	var problems []string
	if d.Room != r.c.Rooms[ri].ID {
		problems = append(problems, fmt.Sprintf("names room id %d, not %d", d.Room, r.c.Rooms[ri].ID))
	}
	p, _, _ := pd.VetCopy(d, r.w.bufs[d.Buffer], r.where)
	return append(problems, p...)
}

// where names the region an offset of one side lies in.
func (r *run) where(side string, off int) string {
	for _, b := range r.w.bufs {
		reg := b.Src
		if side == pd.SideDst {
			reg = b.Dst
		}
		if s := pd.RegionPart(b, side, reg, off); s != "" {
			return s
		}
	}
	return "no pool of the " + side + " arena"
}

// coverage compares the pairs sent with those wanted.
func (r *run) coverage(want []pair, got map[pair]int) []string {
	var out []string
	for _, p := range want {
		switch n := got[p]; {
		case n == 0:
			out = append(out, fmt.Sprintf("%s's page %d → %d never sent", r.w.bufs[p.buffer].Name, p.src, p.dst))
		case n > 1:
			out = append(out, fmt.Sprintf("%s's page %d → %d sent %d times", r.w.bufs[p.buffer].Name, p.src, p.dst, n))
		}
	}
	var strays []string
	for p := range got {
		if !slices.Contains(want, p) {
			strays = append(strays, fmt.Sprintf("%s's page %d → %d", r.w.bufs[p.buffer].Name, p.src, p.dst))
		}
	}
	slices.Sort(strays)
	if len(strays) > 0 {
		out = append(out, fmt.Sprintf("%d pairs the handle does not have, e.g. %s", len(strays), strays[0]))
	}
	return out
}

func clip(ss []string, n int) []string {
	if len(ss) <= n {
		return ss
	}
	return append(ss[:n:n], fmt.Sprintf("and %d more", len(ss)-n))
}
