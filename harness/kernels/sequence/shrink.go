package sequence

import (
	"slices"
)

// Shrink returns smaller sequences than c, most aggressive first: a
// prefix (up to the failing step is enough), without a request (every
// step that names it), without a run of steps (halves, quarters, ... one), a decode batch
// without one request, shorter prompts and shared prefixes, fewer layers,
// captured capacities and pages, requests numbered from 1. Only valid
// sequences are offered, each strictly smaller in one measure, so
// shrinking ends; the property runner keeps the first that still fails
// the same property.
func Shrink(c *Case) []*Case {
	var out []*Case
	add := func(x *Case) {
		if x != nil && x.Validate(0) == nil {
			out = append(out, x)
		}
	}
	n := len(c.Steps)
	for _, k := range []int{n / 2, 3 * n / 4, n - 1} {
		if k >= 1 && k < n {
			x := c.Clone()
			x.Steps = x.Steps[:k]
			add(x)
		}
	}
	for _, id := range c.requestIDs() {
		add(c.without(id))
	}
	for size := n / 2; size >= 1; size /= 2 {
		for i := 0; i+size <= n; i += size {
			if size == n {
				continue
			}
			x := c.Clone()
			x.Steps = slices.Delete(x.Steps, i, i+size)
			add(x)
		}
	}
	for i, s := range c.Steps {
		if (s.Op == OpDecode || s.Op == OpRead) && len(s.Batch) > 1 {
			for j := range s.Batch {
				x := c.Clone()
				x.Steps[i].Batch = slices.Delete(x.Steps[i].Batch, j, j+1)
				add(x)
			}
		}
		if s.Op == OpDecode {
			for _, r := range s.Batch {
				add(c.promptTakes(i, r))
			}
		}
		if s.Op == OpArrive {
			for _, n := range []int{max(1, s.Shared+1, s.Tokens/2), s.Tokens - 1} {
				if n < s.Tokens {
					x := c.Clone()
					x.Steps[i].Tokens = n
					add(x)
				}
			}
			if s.From != 0 {
				x := c.Clone()
				x.Steps[i].From, x.Steps[i].Shared = 0, 0
				add(x)
				if s.Shared > 1 {
					x = c.Clone()
					x.Steps[i].Shared = s.Shared / 2
					add(x)
				}
			}
		}
	}
	shrinkGeometry(c, add)
	if x := c.renumbered(); x != nil {
		add(x)
	}
	return out
}

// shrinkGeometry offers fewer layers, capacities and pages.
func shrinkGeometry(c *Case, add func(*Case)) {
	g := c.Geometry
	for l := range g.HeadDims {
		if len(g.HeadDims) > 1 {
			x := c.Clone()
			x.Geometry.HeadDims = slices.Delete(x.Geometry.HeadDims, l, l+1)
			add(x)
		}
	}
	for i := range g.Capacities {
		if len(g.Capacities) > 1 {
			x := c.Clone()
			x.Geometry.Capacities = slices.Delete(x.Geometry.Capacities, i, i+1)
			add(x)
		}
	}
	if g.Decode && !slices.ContainsFunc(c.Steps, func(s Step) bool { return s.Op == OpTransfer }) {
		x := c.Clone()
		x.Geometry.Decode = false
		add(x)
	}
	for _, n := range []int{(g.Pages + 2) / 2, g.Pages - 1} {
		if n >= 2 && n < g.Pages {
			x := c.Clone()
			x.Geometry.Pages = n
			add(x)
		}
	}
}

func (c *Case) requestIDs() []int {
	var ids []int
	for _, s := range c.Steps {
		if s.Op == OpArrive {
			ids = append(ids, s.Req)
		}
	}
	return ids
}

// without drops request id from the sequence: its steps, its place in
// batches, and what shared its prefix (those arrive unshared).
func (c *Case) without(id int) *Case {
	x := c.Clone()
	x.Steps = x.Steps[:0]
	for _, s := range c.Clone().Steps {
		switch {
		case s.Op == OpDecode || s.Op == OpRead:
			s.Batch = slices.DeleteFunc(s.Batch, func(r int) bool { return r == id })
			if len(s.Batch) == 0 {
				continue
			}
		case s.Req == id:
			continue
		case s.From == id:
			s.From, s.Shared = 0, 0
		}
		x.Steps = append(x.Steps, s)
	}
	if len(x.Steps) == 0 {
		return nil
	}
	return x
}

// renumbered numbers the requests 1, 2, ... in order of arrival; nil when
// they are already.
func (c *Case) renumbered() *Case {
	ids := map[int]int{}
	same := true
	for _, s := range c.Steps {
		if s.Op == OpArrive {
			ids[s.Req] = len(ids) + 1
			same = same && ids[s.Req] == s.Req
		}
	}
	if same {
		return nil
	}
	x := c.Clone()
	for i := range x.Steps {
		s := &x.Steps[i]
		if s.Req != 0 {
			s.Req = ids[s.Req]
		}
		if s.From != 0 {
			s.From = ids[s.From]
		}
		for j := range s.Batch {
			s.Batch[j] = ids[s.Batch[j]]
		}
	}
	return x
}

// promptTakes moves request r's token of decode step i into its prompt:
// the same tokens, one step or batch row fewer (a run of decodes
// becomes a longer prompt).
// nil when r did not arrive in this case before the step.
func (c *Case) promptTakes(i, r int) *Case {
	x := c.Clone()
	at := slices.IndexFunc(x.Steps, func(s Step) bool { return s.Op == OpArrive && s.Req == r })
	if at < 0 || at > i {
		return nil
	}
	x.Steps[at].Tokens++
	b := x.Steps[i].Batch
	x.Steps[i].Batch = slices.DeleteFunc(b, func(q int) bool { return q == r })
	if len(x.Steps[i].Batch) == 0 {
		x.Steps = slices.Delete(x.Steps, i, i+1)
	}
	return x
}
