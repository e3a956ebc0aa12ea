package store

import (
	"math/rand"
	"slices"

	"github.com/kvharness/kvharness/harness/workload"
)

// drawTable is Draw under page-table addressing: a batch of requests,
// each with the pages of its cached prefix and of the tokens it appends,
// then padded requests (no pages) and padded rows. It draws what
// engines' page tables hold and kernels get wrong:
//
//   - shared pages: requests whose prefixes begin with the same pages
//     (prefix caching), which hold none of the appended tokens;
//   - fragmented page lists: a request's own pages scattered and out of
//     order, besides runs of ascending pages;
//   - last pages partly filled, full, and empty (kv_last_page_len 0: a
//     page allocated ahead of the token that will fill it);
//   - padded rows pointing at padded requests, and padded rows at a real
//     request's length or just past it: the slot an overrunning kernel
//     writes.
func (g *Gen) drawTable(rng *rand.Rand) *Case {
	p := max(g.PageSize, 1)
	c := g.capacity(rng)
	n := g.valid(rng, c)
	free := g.freePages(rng, p)
	t := &PageTable{PageSize: p, Indptr: []int32{0}}

	// Shared prefix pages, used by the requests that share.
	shared := take(&free, rng.Intn(3))
	real := 1 + rng.Intn(min(8, max(n, 1)))
	left := n
	var appendFrom []int // per request, the first position appended
	for b := range real {
		a := left / (real - b)
		if b < real-1 && left > 0 {
			a = rng.Intn(left + 1)
		}
		prefix := 0
		if rng.Intn(2) == 0 {
			prefix = rng.Intn(3*p + 1)
		}
		sharing := len(shared) > 0 && rng.Intn(2) == 0
		if sharing {
			prefix = max(prefix, len(shared)*p) // whole shared pages, then whatever it cached alone
		}
		length := prefix + a
		pages := (length + p - 1) / p
		last := length - (pages-1)*p
		if rng.Intn(4) == 0 { // an empty or part-filled last page allocated ahead
			pages, last = length/p+1, length%p
		}
		reuse := 0
		if sharing {
			reuse = min(len(shared), pages)
		}
		if pages-reuse > len(free) { // out of pages: a request of none, appending nothing
			length, a, pages, last, reuse = 0, 0, 0, 0, 0
		}
		own := take(&free, pages-reuse)
		if rng.Intn(3) == 0 {
			slices.Sort(own) // a contiguous-looking run, ascending
		}
		if pages == 0 {
			last = 0
		}
		t.Indices = append(t.Indices, shared[:reuse]...)
		t.Indices = append(t.Indices, own...)
		t.Indptr = append(t.Indptr, int32(len(t.Indices)))
		t.LastPageLen = append(t.LastPageLen, int32(last))
		appendFrom = append(appendFrom, length-a)
		left -= a
	}
	padded := 0
	if c > n-left || rng.Intn(4) == 0 { // padded requests: a captured batch's, of no pages
		padded = rng.Intn(3) + 1
	}
	for range padded {
		t.Indptr = append(t.Indptr, int32(len(t.Indices)))
		t.LastPageLen = append(t.LastPageLen, 0)
	}
	for b := range real {
		for pos := appendFrom[b]; pos < t.Len(b); pos++ {
			t.Batch, t.Positions = append(t.Batch, int32(b)), append(t.Positions, int32(pos))
		}
	}
	valid := len(t.Batch)
	if g.Padding == PadNone {
		c = valid
	}
	for len(t.Batch) < max(c, valid, 1) {
		b, pos := g.paddedToken(rng, t, real, padded)
		t.Batch, t.Positions = append(t.Batch, b), append(t.Positions, pos)
	}
	s := &Case{Padding: PadTable, Valid: valid, Loc: t.Slots(), Rows: make([]workload.Row, len(t.Batch)), Table: t}
	for i := range s.Rows {
		if i < valid {
			s.Rows[i] = workload.Row{Kind: validKind(rng, g.NonFinite), Seed: rng.Uint64()}
		} else {
			s.Rows[i] = workload.Row{Kind: paddedKind(rng), Seed: rng.Uint64()}
		}
	}
	return s
}

// paddedToken draws a padded row's request and position: a padded
// request, or a real one at its length or a little past it.
func (g *Gen) paddedToken(rng *rand.Rand, t *PageTable, real, padded int) (int32, int32) {
	if padded > 0 && rng.Intn(5) < 2 {
		return int32(real + rng.Intn(padded)), int32(rng.Intn(2 * t.PageSize))
	}
	b := rng.Intn(real)
	return int32(b), int32(t.Len(b) + []int{0, 0, 0, 1, t.PageSize}[rng.Intn(5)])
}

// freePages is the pool's pages cases may use, shuffled: every page whose
// first slot is live, without page 0 under sink padding.
func (g *Gen) freePages(rng *rand.Rand, p int) []int32 {
	var out []int32
	for pg := range g.Slots / p {
		if g.live().Contains(int64(pg*p)) && g.live().Contains(int64(pg*p+p-1)) {
			out = append(out, int32(pg))
		}
	}
	rng.Shuffle(len(out), func(i, j int) { out[i], out[j] = out[j], out[i] })
	if len(out) > 4096 {
		out = out[:4096]
	}
	return out
}

// take removes and returns the first n of *free (fewer when it holds fewer).
func take(free *[]int32, n int) []int32 {
	n = min(max(n, 0), len(*free))
	out := append([]int32(nil), (*free)[:n]...)
	*free = (*free)[n:]
	return out
}
