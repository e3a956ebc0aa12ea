package read

import (
	"math/rand"

	"github.com/kvharness/kvharness/harness/workload"
)

// Gen draws adversarial read cases for one pool: empty lists, lists
// shorter than k, slots at 0, at the last slot and at page edges, slots
// shared between requests, keys that tie exactly (the same vector in two
// slots, zero keys, zero queries), zero, tiny, huge and max-finite keys,
// and, for a kernel that declares a non-finite policy, ±Inf and NaN in
// some requests' queries or keys.
type Gen struct {
	Slots       int
	PageSize    int
	MaxRequests int // default 8
	MaxTokens   int // all lists together; default 256
	MaxK        int // default 64
	// Live, when set, are the only slots cases name: the windows of a
	// pool past 4 GiB of offsets (pool.LiveRanges). Nil: every slot.
	Live workload.Ranges
	// NoMaxFinite keeps max-finite keys out (composed cases, whose
	// writers' recipes the read oracle does not bound).
	NoMaxFinite bool
	// NonFinite lets some requests hold ±Inf and NaN in their query or in
	// a key only they name: the kernel declared a policy for them.
	NonFinite bool
}

// live is the slots cases may name.
func (g *Gen) live() workload.Ranges {
	if g.Live == nil {
		return workload.Whole(g.Slots)
	}
	return g.Live
}

func (g *Gen) limits() (requests, tokens, k int) {
	requests, tokens, k = g.MaxRequests, g.MaxTokens, g.MaxK
	if requests <= 0 {
		requests = 8
	}
	if tokens <= 0 {
		tokens = 256
	}
	if k <= 0 {
		k = 64
	}
	return requests, tokens, k
}

// Draw returns a new valid case; all randomness comes from rng.
func (g *Gen) Draw(rng *rand.Rand) *Case {
	maxR, budget, maxK := g.limits()
	c := &Case{K: readSkewed(rng, maxK), Requests: make([]Request, readSkewed(rng, maxR))}
	var shared []int64
	for i := range c.Requests {
		n := min(g.listLen(rng, c.K), budget, g.Slots)
		budget -= n
		c.Requests[i] = Request{Query: g.query(rng), Tokens: g.list(rng, n, shared)}
		shared = append(shared, c.Requests[i].Tokens...)
	}
	c.Keys = g.keys(rng, c)
	if g.NonFinite {
		nonFiniteVecs(c)
	}
	if !g.NoMaxFinite {
		maxFiniteKeys(c)
	}
	return c
}

// nonFiniteVecs gives some requests ±Inf and NaN: by its query's seed
// (mod nonFiniteOdds), a request's query becomes non-finite, or one of
// the keys no other request names does. About one request in eight holds
// one, so most cases also have requests the policy leaves fully judged,
// the ones a leak between requests shows in. Like maxFiniteKeys it draws
// nothing from the case's source.
func nonFiniteVecs(c *Case) {
	names := map[int64]int{} // slot → how many requests name it
	for _, q := range c.Requests {
		for _, t := range q.Tokens {
			names[t]++
		}
	}
	at := make(map[int64]int, len(c.Keys))
	for i, k := range c.Keys {
		at[k.Slot] = i
	}
	for i, q := range c.Requests {
		switch q.Query.Seed % nonFiniteOdds {
		case nonFiniteQuery:
			c.Requests[i].Query.Kind = VecNonFinite
		case nonFiniteKey:
			var own []int64
			for _, t := range q.Tokens {
				if names[t] == 1 {
					own = append(own, t)
				}
			}
			if len(own) > 0 {
				k := &c.Keys[at[own[q.Query.Seed/nonFiniteOdds%uint64(len(own))]]]
				k.Vec = Vec{Kind: VecNonFinite, Seed: k.Seed}
			}
		}
	}
}

// nonFiniteOdds: a request whose query seed is nonFiniteQuery mod it has
// a non-finite query, nonFiniteKey mod it a non-finite key of its own.
const (
	nonFiniteOdds  = 16
	nonFiniteQuery = 5
	nonFiniteKey   = 9
)

// maxFiniteKeys makes some keys max-finite: of the keys that only
// requests whose queries keep their scores finite name
// (VecKind.ScoresMaxFinite), those whose seed is a multiple of
// maxFiniteOdds and that hold no ±Inf or NaN. The choice draws nothing
// from the case's source, so every other draw of the run is what it was
// without the class; a key repeated in several slots (an exact tie)
// changes in all or none.
func maxFiniteKeys(c *Case) {
	unsafe, keys := map[Vec]bool{}, c.KeyMap()
	for _, q := range c.Requests {
		if q.Query.Kind.ScoresMaxFinite() {
			continue
		}
		for _, t := range q.Tokens {
			unsafe[keys[t]] = true
		}
	}
	for i, k := range c.Keys {
		if !unsafe[k.Vec] && k.Kind != VecNonFinite && k.Seed%maxFiniteOdds == 0 {
			c.Keys[i].Vec = Vec{Kind: VecMaxFinite, Seed: k.Seed}
		}
	}
}

// maxFiniteOdds is one in how many keys that may be max-finite are.
const maxFiniteOdds = 3

// skewed draws 1..limit, mostly small.
func readSkewed(rng *rand.Rand, limit int) int {
	switch r := rng.Intn(10); {
	case r < 4:
		return 1 + rng.Intn(min(2, limit))
	case r < 8:
		return 1 + rng.Intn(min(8, limit))
	}
	return 1 + rng.Intn(limit)
}

// listLen draws a list length around k: empty, shorter than k, about k,
// or several times k.
func (g *Gen) listLen(rng *rand.Rand, k int) int {
	switch r := rng.Intn(10); {
	case r < 1:
		return 0
	case r < 4:
		return rng.Intn(k)
	case r < 7:
		return max(0, k-2+rng.Intn(5))
	}
	return rng.Intn(4*k + 9)
}

// list draws n distinct slots, preferring the places kernels get wrong.
func (g *Gen) list(rng *rand.Rand, n int, shared []int64) []int64 {
	out := make([]int64, 0, n)
	taken := make(map[int64]bool, n)
	for range n {
		s := g.freeSlot(rng, out, shared, taken)
		taken[s] = true
		out = append(out, s)
	}
	return out
}

func (g *Gen) freeSlot(rng *rand.Rand, list, shared []int64, taken map[int64]bool) int64 {
	live := g.live()
	for range 16 {
		if s := g.slot(rng, list, shared); live.Contains(s) && !taken[s] {
			return s
		}
	}
	n := live.Size()
	start := rng.Int63n(n)
	for i := range n {
		if s := live.Nth((start + i) % n); !taken[s] {
			return s
		}
	}
	panic("workload: no free slot; lists are never longer than the pool")
}

func (g *Gen) slot(rng *rand.Rand, list, shared []int64) int64 {
	last, p := int64(g.Slots-1), int64(max(g.PageSize, 1))
	switch r := rng.Intn(20); {
	case r < 2:
		return 0
	case r < 4:
		return last
	case r < 8:
		return g.live().Random(rng)/p*p + []int64{0, p - 1, p, -1}[rng.Intn(4)]
	case r < 11 && len(list) > 0:
		return list[len(list)-1] + []int64{-1, 1}[rng.Intn(2)]
	case r < 14 && len(shared) > 0:
		return shared[rng.Intn(len(shared))]
	}
	return g.live().Random(rng)
}

func (g *Gen) query(rng *rand.Rand) Vec { return drawVec(rng, 20, queryOdds) }

// vecOdd is a vector kind and the bound below which a draw takes it.
type vecOdd struct {
	below int
	kind  VecKind
}

// The odds of the kinds: of 20 queries 2 are zero, 1 tiny, 2 outliers,
// 1 subnormal, 1 signed zero, 1 on rounding boundaries, none huge; of 25
// keys 2 are zero, 2 tiny, 3 outliers, 3 huge, 1 subnormal, 1 signed
// zero, 2 on rounding boundaries. The rest are normal.
var (
	queryOdds = []vecOdd{{2, VecZero}, {3, VecTiny}, {5, VecOutlier}, {6, VecSubnormal}, {7, VecSignedZero}, {8, VecBoundary}}
	keyOdds   = []vecOdd{{2, VecZero}, {4, VecTiny}, {7, VecOutlier}, {10, VecHuge}, {11, VecSubnormal}, {12, VecSignedZero},
		{14, VecBoundary}}
)

// drawVec draws a vector of the first kind of odds whose bound a draw
// among n is below, else a normal one.
func drawVec(rng *rand.Rand, n int, odds []vecOdd) Vec {
	kind := VecNormal
	r := rng.Intn(n)
	for _, o := range odds {
		if r < o.below {
			kind = o.kind
			break
		}
	}
	return Vec{Kind: kind, Seed: rng.Uint64()}
}

// keys gives every slot the lists name a vector, in order of first
// appearance; some repeat an earlier key exactly, so their scores tie.
func (g *Gen) keys(rng *rand.Rand, c *Case) []Key {
	var keys []Key
	seen := map[int64]bool{}
	for _, q := range c.Requests {
		for _, s := range q.Tokens {
			if seen[s] {
				continue
			}
			seen[s] = true
			v := readKeyVec(rng)
			if len(keys) > 0 && rng.Intn(7) == 0 {
				v = keys[rng.Intn(len(keys))].Vec
			}
			keys = append(keys, Key{Slot: s, Vec: v})
		}
	}
	return keys
}

func readKeyVec(rng *rand.Rand) Vec { return drawVec(rng, 25, keyOdds) }
