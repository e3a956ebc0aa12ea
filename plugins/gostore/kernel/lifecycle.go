package kernel

import (
	"slices"
	"sync"

	"github.com/kvharness/kvharness/harness/sdk"
	"github.com/kvharness/kvharness/harness/sdk/store"
	"github.com/kvharness/kvharness/plugins/internal/cpustore"
)

// The lifecycle variants break a store only across calls: each is
// correct within one call on a fresh pool, and wrong in the way an
// engine's step loop meets it, after allocations, frees and reuse have
// moved pages between requests. The sequence kind judges them.
var lifecycleVariants = sdk.KernelVariants("sequence", []sdk.Variant{
	{Name: "graph-last-slots", Doc: "a graph replay reads the slots of the previous replay of its shape: the static slot tensor was not refreshed (the incident across steps)"},
	{Name: "late-landing", Doc: "an eager store (a prefill, a load-back) returns before its writes land; they land at the next call, after the caller may have freed and reused the pages"},
	{Name: "lazy-source", Doc: "an eager store returns before it reads its rows; it reads the staging (the pinned host copy) at the next call, after the caller reused it"},
	{Name: "host-copy-released", Doc: "its page-copy path (whole pages to consecutive slots from a page boundary: a load-back from the host copy, a long prefill) acknowledges before it reads the source; it reads it at the next call, after the engine released the host copy"},
	{Name: "pinned-staging-reuse", Doc: "a graph replay's copy of its pinned input rows runs at the next call, after the next step rewrote the static row tensor: a decode stores the rows the following step staged"},
	{Name: "first-token-back", Doc: "computes a page's first token's slot from the slot before it: the token lands in the previous page's last slot (after a shared prefix, the shared page's)"},
	{Name: "stale-read-cache", Doc: "its read caches each slot's key the first time it scores it and never invalidates it: after the page is freed and taken by another request, a read scores the former owner's row"},
	{Name: "transfer-resend", Doc: "its transfer sends the previous call's descriptors again before its own (delivery at least once, no deduplication: block ids duplicated): the previous room's decode pages are written again from prefill pages freed since, which another request may hold"},
	{Name: "kernel-cache-no-stride", Doc: "caches its compiled store by capacity alone, not dtype or row stride: a second layout (another head dim) in one process runs with the first's stride"},
})

// lifecycle is what the lifecycle variants keep between calls.
type lifecycle struct {
	mu      sync.Mutex
	slots   map[shape][]int64 // graph-last-slots: the last replay's slots per shape
	pending []func()          // late-landing, lazy-source: writes to land at the next call
	arena   *byte             // the mapping pending writes go to: dropped when another attach's call comes
	strides map[int]int       // kernel-cache-no-stride: head dim by capacity
}

// shape is a captured graph's key.
type shape struct {
	pool     string
	capacity int
}

// begin lands what earlier calls left pending and returns the slots and
// head dim this call uses, and whether its own writes are deferred.
func (lc *lifecycle) begin(c *store.Call) (loc []int64, dim int, defer_ bool) {
	lc.mu.Lock()
	defer lc.mu.Unlock()
	if len(c.Arena) > 0 && lc.arena == &c.Arena[0] {
		for _, f := range lc.pending {
			f()
		}
	}
	lc.pending = nil
	if len(c.Arena) > 0 {
		lc.arena = &c.Arena[0]
	}
	loc, dim = c.Loc, c.Pool.Layout.HeadDim
	switch c.Variant {
	case "graph-last-slots":
		if c.Graph {
			if lc.slots == nil {
				lc.slots = map[shape][]int64{}
			}
			k := shape{c.Pool.Name, c.Capacity}
			if last, ok := lc.slots[k]; ok {
				loc = last
			}
			lc.slots[k] = slices.Clone(c.Loc)
		}
	case "kernel-cache-no-stride":
		if lc.strides == nil {
			lc.strides = map[int]int{}
		}
		if d, ok := lc.strides[c.Capacity]; ok {
			dim = d
		} else {
			lc.strides[c.Capacity] = dim
		}
	case "late-landing", "lazy-source":
		defer_ = !c.Graph
	case "host-copy-released":
		defer_ = !c.Graph && wholePages(c.Loc[:c.Valid], int64(c.Pool.Layout.PageSize))
	case "pinned-staging-reuse":
		defer_ = c.Graph && c.Valid > 0
	}
	return loc, dim, defer_
}

// later defers f to the next call.
func (lc *lifecycle) later(f func()) {
	lc.mu.Lock()
	defer lc.mu.Unlock()
	lc.pending = append(lc.pending, f)
}

// storeLifecycle is Store for the lifecycle variants (bf16 rows: the
// sequence kind's layout; other layouts store as the plain kernel).
func (k *kernel) storeLifecycle(c *store.Call) {
	loc, dim, deferred := k.life.begin(c)
	stride := 2 * dim
	put := func(rows []uint16, i int) {
		slot := loc[i]
		if c.Variant == "first-token-back" && slot%int64(c.Pool.Layout.PageSize) == 0 && slot > 0 {
			slot--
		}
		at := c.Pool.Base + int(slot)*stride
		if at < c.Pool.Base || at+stride > c.Pool.Base+c.Pool.Bytes {
			return // the wrong stride's slot past the pool: a GPU kernel would fault; dropped here
		}
		// with the wrong dim the row runs past the staged rows: it takes
		// what is there, as a kernel reading its staging with a stale
		// stride reads the neighbour's bytes
		cpustore.PutBF16(c.Arena, at, rows[min(i*dim, len(rows)):min((i+1)*dim, len(rows))])
	}
	n := c.Valid
	switch {
	case !deferred:
		for i := range n {
			put(c.Rows, i)
		}
	case c.Variant == "late-landing":
		rows := slices.Clone(c.Rows)
		k.life.later(func() {
			for i := range n {
				put(rows, i)
			}
		})
	default: // lazy-source, host-copy-released, pinned-staging-reuse: the slots are known, the rows read later
		loc = slices.Clone(loc)
		rows := c.Rows
		k.life.later(func() {
			for i := range n {
				put(rows, i)
			}
		})
	}
}

// wholePages reports whether loc is whole pages: at least one, to
// consecutive slots from a page boundary (what a page copy takes).
func wholePages(loc []int64, p int64) bool {
	if len(loc) < int(p) || len(loc)%int(p) != 0 || loc[0]%p != 0 {
		return false
	}
	for i := range loc {
		if loc[i] != loc[0]+int64(i) {
			return false
		}
	}
	return true
}
