package transfer

import (
	"math/rand"
	"slices"

	"github.com/kvharness/kvharness/harness/pd"
)

// Case profiles: the shapes of page lists a generator favours. Each
// is a row of a transfer suite, as paddings are for stores.
const (
	ProfileMixed   = "mixed"   // all of the below
	ProfileRuns    = "runs"    // long contiguous runs
	ProfileSingles = "singles" // isolated pages
	ProfileEdges   = "edges"   // page 0, the last page, runs across a page table's wrap
)

// Profiles lists the profiles in suite order.
var Profiles = []string{ProfileMixed, ProfileRuns, ProfileSingles, ProfileEdges}

// Gen draws adversarial transfer cases over one geometry. Source
// and destination lists are drawn independently, so a run that is
// contiguous on one side is often broken on the other: an engine must end
// a descriptor where either side stops being contiguous.
type Gen struct {
	Geometry pd.Geometry
	Profile  string
	MaxRooms int // default 4
}

// Draw returns a new valid case; all randomness comes from rng.
func (g *Gen) Draw(rng *rand.Rand) *Case {
	c := &Case{Geometry: g.Geometry.Clone()}
	src, dst := newFreePages(g.Geometry.Pages), newFreePages(g.Geometry.Pages)
	ids := map[uint64]bool{}
	for range g.rooms(rng) {
		m := min(g.pagesPerRoom(rng), src.left, dst.left)
		if m == 0 {
			break
		}
		s, d := g.list(rng, src, m), g.list(rng, dst, m)
		if slices.Equal(s, d) {
			dst.move(d, len(d)-1) // a room keeps its page numbers only by chance, not by construction
		}
		c.Rooms = append(c.Rooms, Room{ID: pd.NewID(rng, ids), Src: s, Dst: d})
	}
	return c
}

func (g *Gen) rooms(rng *rand.Rand) int {
	limit := g.MaxRooms
	if limit <= 0 {
		limit = 4
	}
	if rng.Intn(5) < 2 {
		return 1
	}
	return 1 + rng.Intn(limit)
}

func (g *Gen) pagesPerRoom(rng *rand.Rand) int {
	half := max(1, g.Geometry.Pages/2)
	switch g.Profile {
	case ProfileRuns:
		return 2 + rng.Intn(half)
	case ProfileSingles, ProfileEdges:
		return 1 + rng.Intn(4)
	}
	if rng.Intn(5) == 0 {
		return 1 + rng.Intn(half)
	}
	return 1 + rng.Intn(8)
}

// list draws m free pages of one side as segments: runs of consecutive
// free pages, each from a start the profile favours.
func (g *Gen) list(rng *rand.Rand, fp *freePages, m int) []int64 {
	var out []int64
	for len(out) < m {
		n := min(g.segment(rng), m-len(out))
		p := fp.next(g.start(rng, out))
		for k := 0; k < n; k++ {
			out = append(out, p)
			fp.take(p)
			if k == n-1 || p+1 >= fp.n || fp.taken[p+1] {
				break // the run ends: at the pool's end or at another room's page
			}
			p++
		}
	}
	return out
}

func (g *Gen) segment(rng *rand.Rand) int {
	long := 2 + rng.Intn(max(1, g.Geometry.Pages/2))
	switch g.Profile {
	case ProfileRuns:
		return long
	case ProfileSingles:
		return 1
	case ProfileEdges:
		return 1 + rng.Intn(3)
	}
	switch r := rng.Intn(10); {
	case r < 5:
		return 1
	case r < 8:
		return 2 + rng.Intn(3)
	default:
		return long
	}
}

// start picks where a segment begins; a taken page moves to the next free
// one.
func (g *Gen) start(rng *rand.Rand, out []int64) int64 {
	pages := int64(g.Geometry.Pages)
	wrap := g.wrapEdge()
	edges := append([]int64{0, pages - 1, wrap - 1, wrap}, g.Geometry.EdgePages()...)
	if g.Profile == ProfileEdges || (g.Profile == ProfileMixed && rng.Intn(3) == 0) {
		return edges[rng.Intn(len(edges))]
	}
	if len(out) > 0 && rng.Intn(3) == 0 {
		return out[len(out)-1] + 2 // just past a gap of one page: two runs an engine must not merge
	}
	return rng.Int63n(pages)
}

// wrapEdge is the logical page that the first shifted page table maps to
// physical page 0: a run ending just before it stays contiguous logically
// but wraps physically.
func (g *Gen) wrapEdge() int64 {
	pages := int64(g.Geometry.Pages)
	for _, b := range g.Geometry.Buffers {
		if b.Shift != 0 {
			return (pages - int64(b.Shift)) % pages
		}
	}
	return pages / 2
}

// freePages tracks the pages of one side no room owns yet: a set of the
// taken ones, so that a far pool of millions of pages costs what a case
// takes.
type freePages struct {
	n     int64
	taken map[int64]bool
	left  int
}

func newFreePages(n int) *freePages { return &freePages{n: int64(n), taken: map[int64]bool{}, left: n} }

func (f *freePages) take(p int64) { f.taken[p] = true; f.left-- }

// next returns the first free page at or after p (wrapping, and folding
// out-of-range starts into the pool). There must be one.
func (f *freePages) next(p int64) int64 {
	p = ((p % f.n) + f.n) % f.n
	for f.taken[p] {
		p = (p + 1) % f.n
	}
	return p
}

// move replaces pages[i] with another free page, if there is one.
func (f *freePages) move(pages []int64, i int) {
	if f.left == 0 {
		return
	}
	p := f.next(pages[i] + 1)
	delete(f.taken, pages[i])
	f.taken[p] = true
	pages[i] = p
}
