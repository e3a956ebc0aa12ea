package store

import (
	"math/rand"

	"github.com/kvharness/kvharness/harness/layout"
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
	// Live, when set, are the only slots cases name: the windows of a
	// pool that reaches far (reach.go). Nil: every slot.
	Live workload.Ranges
	// NonFinite lets valid rows hold ±Inf and NaN: the layout's recipe
	// says what becomes of them (a declared policy, or a bf16 copy).
	NonFinite bool

	recent []int64
}

// live is the slots cases may name.
func (g *Gen) live() workload.Ranges {
	if g.Live == nil {
		return workload.Whole(g.Slots)
	}
	return g.Live
}

const recentSlots = 64

// Draw returns a new valid case; all randomness comes from rng.
func (g *Gen) Draw(rng *rand.Rand) *Case {
	if g.Padding == PadTable {
		return g.drawTable(rng) // gentable.go
	}
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
		s.Rows[i] = workload.Row{Kind: validKind(rng, g.NonFinite), Seed: rng.Uint64()}
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
	n := int(g.live().Size())
	if g.Padding == PadSink && g.live().Contains(0) {
		return n - 1
	}
	return n
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
	live := g.live()
	for range 16 {
		s := g.adversarialSlot(rng, chosen)
		if s >= g.lowest() && live.Contains(s) && !taken[s] {
			return s
		}
	}
	// Dense corner: scan the live slots from a random start for a free one.
	n := live.Size()
	start := rng.Int63n(n)
	for i := range n {
		s := live.Nth((start + i) % n)
		if s >= g.lowest() && !taken[s] {
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
		page := g.live().Random(rng) / p
		return page*p + []int64{0, p - 1, p, -1}[rng.Intn(4)]
	case r < 13 && len(chosen) > 0: // neighbours of live slots
		return chosen[rng.Intn(len(chosen))] + []int64{-1, 1}[rng.Intn(2)]
	case r < 15 && len(g.recent) > 0: // reuse of a recently freed slot
		return g.recent[rng.Intn(len(g.recent))]
	default:
		return g.live().Random(rng)
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
		return g.live().Random(rng)
	}
}

func (g *Gen) remember(slots []int64) {
	g.recent = append(g.recent, slots...)
	if n := len(g.recent); n > recentSlots {
		g.recent = append(g.recent[:0], g.recent[n-recentSlots:]...)
	}
}

// validKind draws a valid row's value class: normal half the time, each
// other class real activations hold (zeros, tiny, outliers, subnormals,
// signed zeros, the largest finite values, rounding boundaries) a few
// percent, and ±Inf and NaN where nonFinite allows them.
func validKind(rng *rand.Rand, nonFinite bool) workload.RowKind {
	switch r := rng.Intn(50); {
	case r < 25:
		return workload.RowNormal
	case r < 28:
		return workload.RowZero
	case r < 31:
		return workload.RowTiny
	case r < 34:
		return workload.RowOutlier
	case r < 38:
		return workload.RowSubnormal
	case r < 42:
		return workload.RowSignedZero
	case r < 45:
		return workload.RowMaxFinite
	case r < 48:
		return workload.RowBoundary
	case nonFinite:
		return workload.RowNonFinite
	}
	return workload.RowNormal
}

// paddedKind draws a padded row's data: garbage (random bits, NaN and Inf
// among them) half the time, ±Inf and NaN among normal values a sixth,
// else normal values. A padding-aware kernel reads none of it.
func paddedKind(rng *rand.Rand) workload.RowKind {
	switch r := rng.Intn(6); {
	case r < 3:
		return workload.RowGarbage
	case r < 4:
		return workload.RowNonFinite
	}
	return workload.RowNormal
}

// Fit is c as the target judges it: a valid row of ±Inf and NaN becomes a
// normal row of the same seed where the layout's recipe declares nothing
// of them (a fuzz input decodes every class; a drawn case holds only what
// the target allows).
func (t *Target) Fit(c *Case) *Case {
	if t.Layout.NonFinite() != layout.NonFiniteUndeclared {
		return c
	}
	var out *Case
	for i, r := range c.Rows[:c.Valid] {
		if r.Kind == workload.RowNonFinite {
			if out == nil {
				out = c.Clone()
			}
			out.Rows[i].Kind = workload.RowNormal
		}
	}
	if out == nil {
		return c
	}
	return out
}
