package store

import (
	"math/rand"

	"github.com/kvharness/kvharness/harness/workload"
)

// Gen draws adversarial store cases for one pool and padding convention.
// It remembers recent valid slots so that later cases can reuse them as
// stale padding values, the way a replayed CUDA graph does.
type Gen struct {
	Slots       int
	PageSize    int
	Padding     Padding
	MaxCapacity int // default 512

	recent []int64
}

const recentSlots = 64

// Draw returns a new valid case; all randomness comes from rng.
func (g *Gen) Draw(rng *rand.Rand) *Case {
	c := g.capacity(rng)
	n := g.valid(rng, c)
	if g.Padding == PadNone {
		c = n // without padding every row is valid, so no more rows than slots
	}
	s := &Case{Padding: g.Padding, Valid: n, Loc: make([]int64, c), Rows: make([]workload.Row, c)}
	taken := make(map[int64]bool, n)
	for i := range n {
		s.Loc[i] = g.validSlot(rng, s.Loc[:i], taken)
		taken[s.Loc[i]] = true
		s.Rows[i] = workload.Row{Kind: validKind(rng), Seed: rng.Uint64()}
	}
	for i := n; i < c; i++ {
		s.Loc[i] = g.paddedSlot(rng, s.Loc[:n])
		s.Rows[i] = workload.Row{Kind: paddedKind(rng), Seed: rng.Uint64()}
	}
	g.remember(s.Loc[:n])
	return s
}

func (g *Gen) capacity(rng *rand.Rand) int {
	limit := g.MaxCapacity
	if limit <= 0 {
		limit = 512
	}
	switch r := rng.Intn(10); {
	case r < 4:
		return 1 + rng.Intn(min(8, limit))
	case r < 7:
		return 1 + rng.Intn(min(64, limit))
	default:
		return 1 + rng.Intn(limit)
	}
}

// usable is how many distinct slots valid rows may take.
func (g *Gen) usable() int {
	if g.Padding == PadSink {
		return g.Slots - 1
	}
	return g.Slots
}

func (g *Gen) valid(rng *rand.Rand, c int) int {
	n := c
	if g.Padding != PadNone {
		switch r := rng.Intn(20); {
		case r < 3:
			n = 0
		case r < 6:
			n = c
		case r < 9:
			n = c - 1
		default:
			n = rng.Intn(c + 1)
		}
	}
	return min(n, g.usable())
}

func (g *Gen) lowest() int64 {
	if g.Padding == PadSink {
		return 1
	}
	return 0
}

// validSlot draws an unused slot, preferring the places kernels get wrong.
func (g *Gen) validSlot(rng *rand.Rand, chosen []int64, taken map[int64]bool) int64 {
	for range 16 {
		s := g.adversarialSlot(rng, chosen)
		if s >= g.lowest() && s < int64(g.Slots) && !taken[s] {
			return s
		}
	}
	// Dense corner: scan from a random start for a free slot.
	start := g.lowest() + rng.Int63n(int64(g.usable()))
	for i := range int64(g.usable()) {
		s := g.lowest() + (start-g.lowest()+i)%int64(g.usable())
		if !taken[s] {
			return s
		}
	}
	panic("workload: no free slot; valid() bounds n by usable()")
}

func (g *Gen) adversarialSlot(rng *rand.Rand, chosen []int64) int64 {
	last := int64(g.Slots - 1)
	p := int64(max(g.PageSize, 1))
	switch r := rng.Intn(20); {
	case r < 3:
		return g.lowest()
	case r < 5:
		return last
	case r < 9: // page edges: first or last slot of a page
		page := rng.Int63n(last/p + 1)
		return page*p + []int64{0, p - 1, p, -1}[rng.Intn(4)]
	case r < 13 && len(chosen) > 0: // neighbours of live slots
		return chosen[rng.Intn(len(chosen))] + []int64{-1, 1}[rng.Intn(2)]
	case r < 15 && len(g.recent) > 0: // reuse of a recently freed slot
		return g.recent[rng.Intn(len(g.recent))]
	default:
		return rng.Int63n(last + 1)
	}
}

func (g *Gen) paddedSlot(rng *rand.Rand, valid []int64) int64 {
	if g.Padding != PadCount {
		return g.Padding.Canonical()
	}
	switch r := rng.Intn(20); {
	case r < 2 && len(valid) > 0: // stale slot now owned by a live row of this batch: a race (race.go)
		return valid[rng.Intn(len(valid))]
	case r < 14: // a live slot of another request (race.go)
		return g.liveOutside(rng, valid)
	case r < 17:
		return 0
	default:
		return rng.Int63n(int64(g.Slots))
	}
}

func (g *Gen) remember(slots []int64) {
	g.recent = append(g.recent, slots...)
	if n := len(g.recent); n > recentSlots {
		g.recent = append(g.recent[:0], g.recent[n-recentSlots:]...)
	}
}

func validKind(rng *rand.Rand) workload.RowKind {
	switch r := rng.Intn(10); {
	case r < 7:
		return workload.RowNormal
	case r < 8:
		return workload.RowZero
	case r < 9:
		return workload.RowTiny
	default:
		return workload.RowOutlier
	}
}

func paddedKind(rng *rand.Rand) workload.RowKind {
	if rng.Intn(5) < 3 {
		return workload.RowGarbage
	}
	return workload.RowNormal
}
