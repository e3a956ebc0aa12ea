package read

import (
	"slices"

	"github.com/kvharness/kvharness/harness/workload"
)

// Shrink returns smaller variants of a failing read case, most
// aggressive first: fewer requests, shorter lists, a smaller k, smaller
// slots, then simpler vectors. Every variant is valid when c is (keys no
// list names any more are dropped). The property runner keeps the first
// variant that still fails and shrinks again from it, so the result is a
// local minimum.
func Shrink(c *Case) []*Case {
	var out []*Case
	for _, f := range []func(*Case) []*Case{shrinkRequests, shrinkLists, shrinkK, shrinkReadSlots, shrinkVecs} {
		out = append(out, f(c)...)
	}
	return out
}

// withRequests is c with the given requests, in order.
func withRequests(c *Case, idx []int) *Case {
	out := &Case{K: c.K, Keys: c.Keys}
	for _, i := range idx {
		out.Requests = append(out.Requests, c.Requests[i])
	}
	return out.Clone().dropUnusedKeys()
}

// dropUnusedKeys removes keys no list names and puts the others in order
// of first appearance, the order Decode makes them in.
func (c *Case) dropUnusedKeys() *Case {
	vecs := c.KeyMap()
	keys := c.Keys[:0:0]
	for _, q := range c.Requests {
		for _, t := range q.Tokens {
			if v, ok := vecs[t]; ok {
				keys = append(keys, Key{Slot: t, Vec: v})
				delete(vecs, t)
			}
		}
	}
	c.Keys = keys
	return c
}

// shrinkRequests tries each request alone, each half, and (for a few
// requests) each one left out: a bug that needs two neighbouring requests
// (an unmasked tail) survives the last.
func shrinkRequests(c *Case) []*Case {
	n := len(c.Requests)
	if n < 2 {
		return nil
	}
	var out []*Case
	for i := range n {
		out = append(out, withRequests(c, []int{i}))
	}
	all := workload.Indices(n)
	out = append(out, withRequests(c, all[:n/2]), withRequests(c, all[n/2:]))
	if n <= 32 {
		for i := range n {
			out = append(out, withRequests(c, workload.Without(all, i)))
		}
	}
	return out
}

// shrinkLists empties, halves and (for short lists) thins each list.
func shrinkLists(c *Case) []*Case {
	var out []*Case
	for i, q := range c.Requests {
		n := len(q.Tokens)
		if n == 0 {
			continue
		}
		cuts := [][]int64{nil, q.Tokens[:n/2], q.Tokens[n/2:]}
		if n <= 32 {
			for j := range n {
				cuts = append(cuts, append(append([]int64(nil), q.Tokens[:j]...), q.Tokens[j+1:]...))
			}
		}
		for _, cut := range cuts {
			if len(cut) < n {
				x := c.Clone()
				x.Requests[i].Tokens = append([]int64(nil), cut...)
				out = append(out, x.dropUnusedKeys())
			}
		}
	}
	return out
}

func shrinkK(c *Case) []*Case {
	var out []*Case
	for _, k := range []int{1, c.K / 2, c.K - 1} {
		if k >= 1 && k < c.K {
			x := c.Clone()
			x.K = k
			out = append(out, x)
		}
	}
	return out
}

// shrinkReadSlots moves each key toward slot 0, renaming the slot in every
// list, when the target slot is free: to the lowest free slot, then by
// half the way, a quarter, an eighth… and by one. A key far into a pool
// (past 4 GiB of offsets, where a far pool's window is) gallops to its
// window's edge in a few dozen steps instead of walking it slot by slot.
func shrinkReadSlots(c *Case) []*Case {
	keys := c.KeyMap()
	free := int64(0)
	for _, taken := keys[free]; taken; _, taken = keys[free] {
		free++
	}
	var out []*Case
	for i, k := range c.Keys {
		steps := []int64{free}
		for d := k.Slot / 2; d >= 1; d /= 2 {
			steps = append(steps, k.Slot-d)
		}
		tried := map[int64]bool{}
		for _, to := range steps {
			if _, taken := keys[to]; to < 0 || to >= k.Slot || taken || tried[to] {
				continue
			}
			tried[to] = true
			out = append(out, c.moved(i, to))
		}
	}
	return out
}

// moved is c with key i in slot to.
func (c *Case) moved(i int, to int64) *Case {
	x := c.Clone()
	from := x.Keys[i].Slot
	x.Keys[i].Slot = to
	for _, q := range x.Requests {
		for j, t := range q.Tokens {
			if t == from {
				q.Tokens[j] = to
			}
		}
	}
	return x
}

// shrinkVecs replaces each key and query with the plainest vector; a
// query whose list names a max-finite key keeps its kind (a normal one
// would overflow the key's score).
func shrinkVecs(c *Case) []*Case {
	simple := Vec{Kind: VecNormal}
	var out []*Case
	for i, k := range c.Keys {
		if k.Vec != simple && k.Kind != VecZero {
			x := c.Clone()
			x.Keys[i].Vec = simple
			out = append(out, x)
		}
	}
	keys := c.KeyMap()
	for i, q := range c.Requests {
		if q.Query != simple && q.Query.Kind != VecZero && !slices.ContainsFunc(q.Tokens, func(t int64) bool { return keys[t].Kind == VecMaxFinite }) {
			x := c.Clone()
			x.Requests[i].Query = simple
			out = append(out, x)
		}
	}
	return out
}
