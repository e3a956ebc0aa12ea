package pdasync

import (
	"math/rand"
	"slices"

	"github.com/kvharness/kvharness/harness/pd"
)

// Case profiles: the schedules a generator favours. Each is a row of a
// suite.
const (
	ProfileMixed      = "mixed"      // every fate below, page tables compacted or not, rooms reusing pages
	ProfileAborts     = "aborts"     // rooms aborted while some of their handles are held
	ProfileFailures   = "failures"   // one handle of several failed while its siblings are held
	ProfileComponents = "components" // several components, one delivered while another is held
	// ProfileEdges draws rooms at the pools' edges: their first and last
	// pages, and, in far pools (pd.Geometry.Far), the pages at 2 GiB and
	// 4 GiB of byte offsets; the page table stays the identity.
	ProfileEdges = "edges"
)

// Profiles lists the profiles in suite order.
var Profiles = []string{ProfileMixed, ProfileAborts, ProfileFailures, ProfileComponents, ProfileEdges}

// Gen draws adversarial cases over one geometry: rooms of a few pages on
// both sides, split into components of buffers and handles of pages, a
// page table compacted or not, rooms that reuse the pages of rooms before
// them, and a schedule that holds some handles while it opens, fails,
// delivers or aborts around them.
type Gen struct {
	Geometry pd.Geometry
	Profile  string
	MaxRooms int // rooms admitted at the start, at most; 0: 3
}

// fate is what a room's script does to it.
type fate int

const (
	fateComplete  fate = iota // every handle opened, components delivered one at a time
	fateFail                  // one handle failed while its siblings are held
	fateAbort                 // aborted while some handles are held
	fateAbortLate             // aborted once every handle ran, before the notes came
)

// Draw returns a new valid case; all randomness comes from rng.
func (g *Gen) Draw(rng *rand.Rand) *Case {
	c := &Case{Geometry: g.Geometry.Clone()}
	pages := g.Geometry.Pages
	var src, virt pageSource
	if g.Profile == ProfileEdges {
		src, virt = g.edgeFree(), g.edgeFree()
	} else {
		if g.Profile != ProfileComponents && rng.Intn(3) > 0 {
			c.PageTable = compacted(rng, pages)
		}
		src, virt = newFree(pages), newFree(pages)
	}
	ids := map[uint64]bool{}
	limit := g.MaxRooms
	if limit <= 0 {
		limit = 3
	}
	for range 1 + rng.Intn(limit) {
		m := min(1+rng.Intn(6), src.left(), virt.left())
		if m == 0 {
			break
		}
		c.Rooms = append(c.Rooms, g.room(rng, ids, src.draw(rng, m), virt.draw(rng, m)))
	}
	g.successors(rng, c, src, ids)
	c.Steps = g.schedule(rng, c)
	return c
}

// successors adds rooms that reuse an earlier room's pages, some or all:
// each room has one successor at most, so that two rooms waiting for the
// same pages never share them.
func (g *Gen) successors(rng *rand.Rand, c *Case, src pageSource, ids map[uint64]bool) {
	taken := map[int]bool{}
	for range rng.Intn(3) {
		prev := rng.Intn(len(c.Rooms))
		pv := c.Rooms[prev].Virt
		m := min(1+rng.Intn(len(pv)), src.left())
		if m == 0 || taken[prev] {
			continue
		}
		taken[prev] = true
		virt := slices.Clone(pv)
		rng.Shuffle(len(virt), func(i, j int) { virt[i], virt[j] = virt[j], virt[i] })
		r := g.room(rng, ids, src.draw(rng, m), virt[:m])
		r.After = &prev
		c.Rooms = append(c.Rooms, r)
	}
}

// room builds one room: components over the buffers, handles over its
// pages.
func (g *Gen) room(rng *rand.Rand, ids map[uint64]bool, src, virt []int64) Room {
	r := Room{ID: pd.NewID(rng, ids), Src: src, Virt: virt}
	nb := len(g.Geometry.Buffers)
	k := 1 + rng.Intn(3)
	if g.Profile == ProfileComponents {
		k = 2 + rng.Intn(2)
	}
	k = min(k, nb)
	order := rng.Perm(nb)
	for ci := range k {
		var bufs []int
		for i := ci; i < nb; i += k {
			bufs = append(bufs, order[i])
		}
		slices.Sort(bufs)
		r.Components = append(r.Components, Component{Buffers: bufs, Handles: handles(rng, len(src), g.Profile)})
	}
	return r
}

// handles splits m pages into 1 to 3 consecutive ranges (at least 2 when
// failures are the point).
func handles(rng *rand.Rand, m int, profile string) []Handle {
	n := 1 + rng.Intn(3)
	if profile == ProfileFailures {
		n = 2 + rng.Intn(2)
	}
	n = min(n, m)
	cuts := rng.Perm(m - 1)[:n-1]
	for i := range cuts {
		cuts[i]++
	}
	slices.Sort(cuts)
	cuts = append(cuts, m)
	var out []Handle
	first := 0
	for _, c := range cuts {
		out = append(out, Handle{First: first, Pages: c - first})
		first = c
	}
	return out
}

// compacted is a page table after compaction: some pages moved, some in
// place (heterogeneous), or all shuffled.
func compacted(rng *rand.Rand, pages int) []int64 {
	t := make([]int64, pages)
	for i := range t {
		t[i] = int64(i)
	}
	if rng.Intn(3) == 0 {
		rng.Shuffle(pages, func(i, j int) { t[i], t[j] = t[j], t[i] })
		return t
	}
	for range 1 + rng.Intn(max(1, pages/2)) {
		i, j := rng.Intn(pages), rng.Intn(pages)
		t[i], t[j] = t[j], t[i]
	}
	return t
}

// pageSource is the pages of one side no room holds yet, drawn m at a
// time.
type pageSource interface {
	left() int
	draw(rng *rand.Rand, m int) []int64
}

// free is the pages of one side no room holds yet.
type free struct{ pages []int64 }

func newFree(n int) *free {
	f := &free{}
	for p := range n {
		f.pages = append(f.pages, int64(p))
	}
	return f
}

func (f *free) left() int { return len(f.pages) }

// draw takes m free pages: often a run of consecutive ones, else scattered.
func (f *free) draw(rng *rand.Rand, m int) []int64 {
	var out []int64
	for len(out) < m {
		i := rng.Intn(len(f.pages))
		n := 1
		if rng.Intn(2) == 0 {
			n = m - len(out)
		}
		for k := 0; k < n && i < len(f.pages); k++ {
			p := f.pages[i]
			if k > 0 && p != out[len(out)-1]+1 {
				break
			}
			out = append(out, p)
			f.pages = slices.Delete(f.pages, i, i+1)
		}
	}
	return out
}

// edges is the pages of one side no room holds yet, of a pool drawn at
// its edges: a set of the taken ones, so that a far pool of a quarter of a
// million pages costs what a case takes. A draw starts at an edge (the
// first page, the last, one at 2 GiB or 4 GiB of byte offsets in some
// buffer) and takes the free pages from there on, wrapping.
type edges struct {
	n      int64
	starts []int64
	taken  map[int64]bool
}

func (g *Gen) edgeFree() *edges {
	n := int64(g.Geometry.Pages)
	starts := append([]int64{0, n - 1}, g.Geometry.EdgePages()...)
	return &edges{n: n, starts: starts, taken: map[int64]bool{}}
}

func (e *edges) left() int { return int(e.n) - len(e.taken) }

func (e *edges) draw(rng *rand.Rand, m int) []int64 {
	p := e.starts[rng.Intn(len(e.starts))]
	var out []int64
	for range min(m, e.left()) {
		for e.taken[p] {
			p = (p + 1) % e.n
		}
		e.taken[p] = true
		out = append(out, p)
	}
	return out
}
