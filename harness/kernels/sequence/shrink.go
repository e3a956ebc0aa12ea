package sequence

import (
	"slices"
)

// Shrink returns smaller sequences than c, most aggressive first: a
// prefix (up to the failing step is enough), without a request (every
// step that names it), without a run of steps (halves, quarters, ...
// one), without an eviction and its load-back, an arrival merged into an
// earlier arrival step (one prefill batch admits both), a request folded
// into an earlier one (its decodes become the other's, whose prompt may
// grow so that the first of them takes a fresh page, as the folded
// request's arrival did; sequences of at most foldSteps), a decode batch without one request, shorter
// prompts and shared prefixes, fewer layers, captured capacities and
// pages, smaller capacities, requests numbered from 1.
//
// Only valid sequences are offered, each strictly smaller than c in the
// order of (steps, requests, batch rows, prompt tokens, shared tokens,
// layers, capacities, their sum, pages, the decode side, request ids),
// compared first to last: a fold adds prompt tokens but drops a request
// and its arrival, a prompt that takes a decode's token drops a batch
// row. So shrinking ends, and the property runner bounds its checks
// besides; it keeps the first candidate that still fails the same
// property. Shrink is a function of c alone: the same failure shrinks
// the same way every run.
func Shrink(c *Case) []*Case {
	var out []*Case
	cp := newCheckpoints(c)
	add := func(x *Case) {
		if x != nil && cp.validate(x) == nil {
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
		if s.Op == OpEvict {
			add(c.withoutEviction(i))
		}
	}
	c.mergeArrivals(add)
	if n <= foldSteps {
		c.folds(add)
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
		for j, a := range s.Arrivals() {
			c.shrinkArrival(i, j, a, add)
		}
	}
	shrinkGeometry(c, add)
	if x := c.renumbered(); x != nil {
		add(x)
	}
	return out
}

// shrinkArrival offers arrival j of step i with a shorter prompt (the
// shortest, the shortest ending at the same place in its last page, half,
// a page less, a token less), without its shared prefix, and with half
// of it.
func (c *Case) shrinkArrival(i, j int, a Arrival, add func(*Case)) {
	with := func(b Arrival) {
		x := c.Clone()
		as := x.Steps[i].Arrivals()
		as[j] = b
		x.Steps[i] = arriving(as)
		add(x)
	}
	least, P := max(1, a.Shared+1), c.Geometry.PageSize
	aligned := a.Tokens % P // the fewest pages that end the prompt at the same place in a page
	if aligned < least {
		aligned += (least - aligned + P - 1) / P * P
	}
	tried := map[int]bool{}
	for _, n := range []int{least, aligned, max(least, a.Tokens/2), a.Tokens - P, a.Tokens - 1} {
		if n >= least && n < a.Tokens && !tried[n] {
			tried[n] = true
			b := a
			b.Tokens = n
			with(b)
		}
	}
	if a.From != 0 {
		b := a
		b.From, b.Shared = 0, 0
		with(b)
		if a.Shared > 1 {
			b = a
			b.Shared = a.Shared / 2
			with(b)
		}
	}
}

// shrinkGeometry offers fewer layers, capacities and pages, and smaller
// capacities.
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
	least := c.peakPages() + 1
	for k, n := range []int{least, max(least, (g.Pages+2)/2), g.Pages - 1} {
		if n >= 2 && n < g.Pages && (k == 0 || n > least) {
			x := c.Clone()
			x.Geometry.Pages = n
			add(x)
		}
	}
	for i, cp := range g.Capacities {
		low := 1
		if i > 0 {
			low = g.Capacities[i-1] + 1
		}
		for _, n := range []int{low, cp - 1} {
			if n >= low && n < cp {
				x := c.Clone()
				x.Geometry.Capacities[i] = n
				add(x)
			}
		}
	}
}

// requestIDs lists the requests in order of arrival.
func (c *Case) requestIDs() []int {
	var ids []int
	for _, s := range c.Steps {
		for _, a := range s.Arrivals() {
			ids = append(ids, a.Req)
		}
	}
	return ids
}

// without drops request id from the sequence: its arrival and steps, its
// place in batches, and what shared its prefix (those arrive unshared).
func (c *Case) without(id int) *Case {
	x := c.Clone()
	x.Steps = x.Steps[:0]
	for _, s := range c.Clone().Steps {
		switch {
		case s.Op == OpArrive:
			as := slices.DeleteFunc(s.Arrivals(), func(a Arrival) bool { return a.Req == id })
			if len(as) == 0 {
				continue
			}
			for k := range as {
				if as[k].From == id {
					as[k].From, as[k].Shared = 0, 0
				}
			}
			s = arriving(as)
		case s.Op == OpDecode || s.Op == OpRead:
			s.Batch = slices.DeleteFunc(s.Batch, func(r int) bool { return r == id })
			if len(s.Batch) == 0 {
				continue
			}
		case s.Req == id:
			continue
		}
		x.Steps = append(x.Steps, s)
	}
	if len(x.Steps) == 0 {
		return nil
	}
	return x
}

// withoutEviction drops eviction step i and the load-back that follows
// it: the request stays resident in between (either alone leaves the
// other invalid). Without a load-back the eviction goes alone. nil when
// the request's next step after the eviction is not a load.
func (c *Case) withoutEviction(i int) *Case {
	r := c.Steps[i].Req
	x := c.Clone()
	for j := i + 1; j < len(c.Steps); j++ {
		s := c.Steps[j]
		switch {
		case s.Op == OpLoad && s.Req == r:
			x.Steps = slices.Delete(x.Steps, j, j+1)
			x.Steps = slices.Delete(x.Steps, i, i+1)
			return x
		case s.Req == r && s.Op != OpArrive:
			return nil // aborted while evicted
		}
	}
	x.Steps = slices.Delete(x.Steps, i, i+1)
	return x
}

// mergeArrivals offers each arrival step's requests admitted instead by
// an earlier arrival step (one prefill batch), the nearest first: a step
// fewer, the pages allocated in the same order when nothing between the
// two freed or took one.
func (c *Case) mergeArrivals(add func(*Case)) {
	first := -1
	for j, s := range c.Steps {
		if s.Op != OpArrive {
			continue
		}
		for i := j - 1; i >= 0; i-- {
			if c.Steps[i].Op != OpArrive || (i != first && i < j-1 && c.hasArrival(i+1, j)) {
				continue
			}
			x := c.Clone()
			x.Steps[i] = arriving(append(x.Steps[i].Arrivals(), s.Arrivals()...))
			x.Steps = slices.Delete(x.Steps, j, j+1)
			add(x)
		}
		if first < 0 {
			first = j
		}
	}
}

// checkpoints are the scheduler model's states along a case's steps,
// every checkpointEvery steps: Shrink validates hundreds of candidates of
// a long trace, most of which keep its geometry and a long run of its
// first steps, and each is played from the last state before it differs
// rather than from the start. The model is a function of the geometry
// and the steps played, so the verdict is Validate's.
type checkpoints struct {
	c  *Case
	at []*model // at[k]: the model after c's first k*checkpointEvery steps, all valid
}

const checkpointEvery = 8

func newCheckpoints(c *Case) *checkpoints {
	cp := &checkpoints{c: c}
	if c.Geometry.Validate() != nil {
		return cp
	}
	m := newModel(c.Geometry)
	cp.at = append(cp.at, m.clone())
	for i, s := range c.Steps {
		p, err := m.plan(i, s)
		if err != nil {
			break
		}
		m.apply(p)
		if (i+1)%checkpointEvery == 0 {
			cp.at = append(cp.at, m.clone())
		}
	}
	return cp
}

// validate is x.Validate(0), played from the last checkpoint whose steps
// x shares.
func (cp *checkpoints) validate(x *Case) error {
	if len(cp.at) == 0 || len(x.Steps) == 0 || len(x.Steps) > MaxSteps || !x.Geometry.equal(cp.c.Geometry) {
		return x.Validate(0)
	}
	same := 0
	for same < len(x.Steps) && same < len(cp.c.Steps) && x.Steps[same].equal(cp.c.Steps[same]) {
		same++
	}
	k := min(same/checkpointEvery, len(cp.at)-1)
	return cp.at[k].clone().play(x.Steps, k*checkpointEvery)
}

// hasArrival reports whether a step in [i, j) is an arrival.
func (c *Case) hasArrival(i, j int) bool {
	return slices.ContainsFunc(c.Steps[i:j], func(s Step) bool { return s.Op == OpArrive })
}

// peakPages is the most pages of the prefill side the sequence holds at
// once: with one more (the padding sink) the pool holds it all.
func (c *Case) peakPages() int {
	m := newModel(c.Geometry)
	peak := 0
	for i, s := range c.Steps {
		p, err := m.plan(i, s)
		if err != nil {
			return c.Geometry.Pages - 1
		}
		m.apply(p)
		peak = max(peak, c.Geometry.Pages-1-len(m.free))
	}
	return peak
}

// folds offers, for each request x and each request y that arrived
// before it, the sequence without x's arrival and its leaving, y
// decoding where x decoded (x dropped from a batch y is in already). y's
// prompt is offered as it is and grown so that y's first decode in x's
// place takes a fresh page, as x's arrival took one: the page a stale
// write needs to land in is then taken by the decode itself. An evicted
// request's life after its load-back folds the same way into any other
// request: the load-back goes, the eviction stays.
func (c *Case) folds(add func(*Case)) {
	ids := c.requestIDs()
	offer := func(x, y, from int) {
		add(c.fold(x, y, 0, from))
		if k := c.foldGrowth(x, y, from); k > 0 {
			add(c.fold(x, y, k, from))
		}
	}
	for xi, x := range ids {
		for _, y := range ids[:xi] {
			offer(x, y, 0)
		}
	}
	for i, s := range c.Steps {
		if s.Op != OpLoad {
			continue
		}
		for _, y := range ids {
			if y != s.Req {
				offer(s.Req, y, i)
			}
		}
	}
}

// foldSteps is the longest sequence folds are offered for: a fold is
// the last move to a minimal case, and offering one for every pair of
// requests of a long sequence costs checks the drops spend better.
const foldSteps = 8

// fold is folds' sequence with y's prompt grown by k tokens, x's steps
// from step from on folded (from 0: all of them, its arrival dropped);
// nil when nothing of x's is left to fold.
func (c *Case) fold(x, y, k, from int) *Case {
	out := c.Clone()
	out.Steps = out.Steps[:0]
	decodes := 0
	for i, s := range c.Clone().Steps {
		switch {
		case s.Op == OpArrive:
			as := s.Arrivals()
			if from == 0 {
				as = slices.DeleteFunc(as, func(a Arrival) bool { return a.Req == x })
			}
			if len(as) == 0 {
				continue
			}
			for i := range as {
				if as[i].From == x && from == 0 {
					as[i].From = y
				}
				if as[i].Req == y {
					as[i].Tokens += k
				}
			}
			s = arriving(as)
		case i < from:
		case s.Op == OpDecode || s.Op == OpRead:
			at := slices.Index(s.Batch, x)
			if at < 0 {
				break
			}
			decodes++
			if slices.Contains(s.Batch, y) {
				s.Batch = slices.Delete(s.Batch, at, at+1)
			} else {
				s.Batch[at] = y
			}
		case s.Req == x:
			continue
		}
		out.Steps = append(out.Steps, s)
	}
	if decodes == 0 {
		return nil
	}
	return out
}

// foldGrowth is how many tokens y's prompt must grow by so that y's
// length at x's first decode from step from on is a whole number of
// pages (that decode takes a page): 0 when it is already, or x never
// decodes there without y.
func (c *Case) foldGrowth(x, y, from int) int {
	n := -1 // y's tokens; -1 before it arrives
	for i, s := range c.Steps {
		for _, a := range s.Arrivals() {
			if a.Req == y {
				n = a.Tokens
			}
		}
		if s.Op != OpDecode {
			continue
		}
		hasX, hasY := slices.Contains(s.Batch, x), slices.Contains(s.Batch, y)
		if hasX && !hasY && i >= from {
			if n < 0 {
				return 0
			}
			P := c.Geometry.PageSize
			return (P - n%P) % P
		}
		if hasY {
			n++
		}
	}
	return 0
}

// renumbered numbers the requests 1, 2, ... in order of arrival; nil when
// they are already.
func (c *Case) renumbered() *Case {
	ids := map[int]int{}
	same := true
	for _, id := range c.requestIDs() {
		ids[id] = len(ids) + 1
		same = same && ids[id] == id
	}
	if same {
		return nil
	}
	x := c.Clone()
	for i := range x.Steps {
		s := &x.Steps[i]
		if s.Op == OpArrive {
			as := s.Arrivals()
			for k := range as {
				as[k].Req = ids[as[k].Req]
				if as[k].From != 0 {
					as[k].From = ids[as[k].From]
				}
			}
			*s = arriving(as)
			continue
		}
		if s.Req != 0 {
			s.Req = ids[s.Req]
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
	at, k := -1, -1
	for j, s := range x.Steps[:i] {
		if k = slices.IndexFunc(s.Arrivals(), func(a Arrival) bool { return a.Req == r }); k >= 0 {
			at = j
			break
		}
	}
	if at < 0 {
		return nil
	}
	as := x.Steps[at].Arrivals()
	as[k].Tokens++
	x.Steps[at] = arriving(as)
	b := x.Steps[i].Batch
	x.Steps[i].Batch = slices.DeleteFunc(b, func(q int) bool { return q == r })
	if len(x.Steps[i].Batch) == 0 {
		x.Steps = slices.Delete(x.Steps, i, i+1)
	}
	return x
}
