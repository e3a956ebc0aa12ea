package load

import (
	"math/rand"
	"slices"
)

// The profiles of a load suite, one row each. Each draws the schedules
// that expose one family of ordering bugs without hiding another's:
// readers held on another stream hold a correct load back entirely, so
// they get a row of their own.
const (
	// ProfileLoad: layer loads with late copies, the consumer having read
	// the layers before the first late one.
	ProfileLoad = "load"
	// ProfileFail: layer loads with failing copies.
	ProfileFail = "fail"
	// ProfileReuse: loads and stores over pages a reader on another stream
	// still holds (write after read).
	ProfileReuse = "reuse"
	// ProfileStore: side-stream stores with late copies and late inputs.
	ProfileStore = "store"
	// ProfileEdges: loads and stores of the pools' edge pages: their
	// first and last, and, in far pools (Geometry.Far), the pages at 2 GiB
	// and 4 GiB of byte offsets.
	ProfileEdges = "edges"
)

// Profiles lists every profile in suite order.
var Profiles = []string{ProfileLoad, ProfileFail, ProfileReuse, ProfileStore, ProfileEdges}

// maxCasePages bounds the pages a generated case moves per layer and
// buffer.
const maxCasePages = 4

// Gen draws cases of one profile over a geometry.
type Gen struct {
	Geometry Geometry
	Profile  string
}

// Draw draws one case. The schedule is what makes an ordering bug show:
// the first late copy is drawn in a layer after the first when there are
// several (the consumer has read the layers before it, as a forward that
// runs ahead of the load does), so that a gate waiting on the wrong layer
// or on a counter that ran ahead lets the read through.
func (g *Gen) Draw(rng *rand.Rand) *Case {
	c := g.shape(rng)
	switch g.Profile {
	case ProfileFail:
		c.Fail = g.items(rng, c, 1+rng.Intn(2))
		if rng.Intn(2) == 0 {
			c.Late = g.late(rng, c)
		}
	case ProfileReuse:
		if rng.Intn(2) == 0 {
			c.Op = OpStore
		}
		c.Readers = rng.Perm(len(c.Pages))[:1+rng.Intn(len(c.Pages))]
		slices.Sort(c.Readers)
	case ProfileStore:
		c.Op = OpStore
		if rng.Intn(10) < 7 {
			c.Late = g.late(rng, c)
		}
		if rng.Intn(2) == 0 {
			c.LateInputs = g.items(rng, c, 1)
		}
	case ProfileEdges:
		if rng.Intn(3) == 0 {
			c.Op = OpStore
		}
		if rng.Intn(2) == 0 {
			c.Late = g.late(rng, c)
		}
	default:
		if rng.Intn(20) > 0 {
			c.Late = g.late(rng, c)
		}
	}
	return c
}

// shape draws the layers, buffers, reading order and pages.
func (g *Gen) shape(rng *rand.Rand) *Case {
	geo := g.Geometry
	c := &Case{Geometry: geo, Op: OpLoad, Layers: 1}
	if geo.Layers > 1 && rng.Intn(20) >= 3 {
		c.Layers = 2 + rng.Intn(geo.Layers-1)
	}
	if rng.Intn(4) > 0 {
		c.FirstLayer = 1 + rng.Intn(2*geo.Layers)
	}
	for i, b := range geo.Buffers {
		if rng.Intn(10) < 7 || rng.Intn(2) == 0 || (i == len(geo.Buffers)-1 && len(c.Buffers) == 0) {
			c.Buffers = append(c.Buffers, b.Name)
		}
	}
	c.Order = canonicalOrder(c.Buffers)
	if rng.Intn(10) >= 7 {
		rng.Shuffle(len(c.Order), func(i, j int) { c.Order[i], c.Order[j] = c.Order[j], c.Order[i] })
	}
	if g.Profile == ProfileEdges {
		c.Pages = g.edgePages(rng)
		return c
	}
	n := 1 + rng.Intn(min(maxCasePages, geo.Pages))
	src, dst := rng.Perm(geo.Pages), rng.Perm(geo.Pages)
	for i := range n {
		c.Pages = append(c.Pages, Page{Src: src[i], Dst: dst[i]})
	}
	return c
}

// edgePages draws an edges case's pages from the pool's edges (its live
// pages when far): one of them past 2 GiB of some buffer's pool when
// there is one, as source or destination, the rest anywhere among them.
func (g *Gen) edgePages(rng *rand.Rand) []Page {
	geo := g.Geometry
	edges := geo.LivePages()
	if edges == nil {
		for p := range edgePages {
			edges = append(edges, p, geo.Pages-1-p)
		}
		slices.Sort(edges)
		edges = slices.Compact(slices.DeleteFunc(edges, func(p int) bool { return p < 0 }))
	}
	n := 1 + rng.Intn(min(maxCasePages, len(edges)))
	src, dst := perm(rng, edges), perm(rng, edges)
	if far := geo.EdgePages(); len(far) > 0 {
		p := far[rng.Intn(len(far))]
		side := src
		if rng.Intn(2) == 0 {
			side = dst
		}
		k := slices.Index(side, p)
		side[0], side[k] = side[k], side[0]
	}
	out := make([]Page, n)
	for i := range out {
		out[i] = Page{Src: src[i], Dst: dst[i]}
	}
	return out
}

// perm is xs in a random order.
func perm(rng *rand.Rand, xs []int) []int {
	out := make([]int, len(xs))
	for i, j := range rng.Perm(len(xs)) {
		out[i] = xs[j]
	}
	return out
}

// canonicalOrder is DeepSeek-V4's reading order: the indexer reads
// index-K before attention reads the rest, in the geometry's order.
func canonicalOrder(buffers []string) []string {
	out := make([]string, 0, len(buffers))
	if slices.Contains(buffers, BufferIndexK) {
		out = append(out, BufferIndexK)
	}
	for _, b := range buffers {
		if b != BufferIndexK {
			out = append(out, b)
		}
	}
	return out
}

// late draws the late copies: one in the first late layer, sometimes
// another at or after it.
func (g *Gen) late(rng *rand.Rand, c *Case) []Item {
	first := 0
	if c.Layers > 1 && rng.Intn(20) >= 3 {
		first = 1 + rng.Intn(c.Layers-1)
	}
	out := []Item{g.item(rng, c, first)}
	if rng.Intn(10) < 3 {
		it := g.item(rng, c, first+rng.Intn(c.Layers-first))
		if it != out[0] {
			out = append(out, it)
		}
	}
	return out
}

// items draws n distinct items anywhere in the case.
func (g *Gen) items(rng *rand.Rand, c *Case, n int) []Item {
	var out []Item
	for range n {
		it := g.item(rng, c, rng.Intn(c.Layers))
		if !slices.Contains(out, it) {
			out = append(out, it)
		}
	}
	return out
}

func (g *Gen) item(rng *rand.Rand, c *Case, layer int) Item {
	return Item{Layer: layer, Buffer: c.Buffers[rng.Intn(len(c.Buffers))], Page: rng.Intn(len(c.Pages))}
}
