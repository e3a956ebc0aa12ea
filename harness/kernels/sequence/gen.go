package sequence

import (
	"math/rand"
	"slices"
)

// Gen draws sequences over a geometry as a busy scheduler produces them:
// arrivals (some sharing a resident request's prefix, some admitted
// several to a prefill batch), decode batches of
// every size up to the largest capacity (so that a replay pads), finishes
// and aborts that free pages the next arrival takes (last freed, first
// reused), evictions and load-backs. Every drawn step is one the model
// accepts; a step the pool cannot hold is not drawn.
type Gen struct {
	Geometry Geometry
	// Steps is the least number of steps a sequence has (it has up to
	// twice as many); 0: DefaultSteps.
	Steps int
	// NoEvict leaves evictions and load-backs out.
	NoEvict bool
	// Prompt is the longest prompt drawn; 0: three pages.
	Prompt int
	// Reads draws read steps: the plugin serves a read kernel.
	Reads bool
	// Trace, when set, is a recorded sequence the generator starts from:
	// the first draw is the trace as recorded, each later one plays a
	// prefix of it, then goes on at random.
	Trace *Case

	drawn int
}

// DefaultSteps is a drawn sequence's least length.
const DefaultSteps = 20

// Draw draws one sequence.
func (g *Gen) Draw(rng *rand.Rand) *Case {
	n := g.Steps
	if n == 0 {
		n = DefaultSteps
	}
	n += rng.Intn(n + 1)
	if g.drawn++; g.drawn == 1 && g.Trace != nil {
		return g.Trace.Clone()
	}
	c := &Case{Geometry: g.Geometry}
	m := newModel(g.Geometry)
	next := 1
	if g.Trace != nil && len(g.Trace.Steps) > 0 {
		keep := 1 + rng.Intn(len(g.Trace.Steps))
		for _, s := range g.Trace.Steps[:keep] {
			p, err := m.plan(len(c.Steps), s)
			if err != nil {
				break
			}
			m.apply(p)
			c.Steps = append(c.Steps, s)
			for _, a := range s.Arrivals() {
				next = max(next, a.Req+1)
			}
		}
	}
	for tries := 0; len(c.Steps) < n && tries < 50*n; tries++ {
		s := g.step(rng, m, &next)
		p, err := m.plan(len(c.Steps), s)
		if err != nil {
			continue
		}
		m.apply(p)
		c.Steps = append(c.Steps, s)
	}
	return c
}

// step draws a candidate step.
func (g *Gen) step(rng *rand.Rand, m *model, next *int) Step {
	var live, out, decoding []int
	for id, r := range m.reqs {
		switch r.state {
		case resident:
			live = append(live, id)
		case evicted:
			out = append(out, id)
		case remote:
			decoding = append(decoding, id)
		}
	}
	slices.Sort(live)
	slices.Sort(out)
	slices.Sort(decoding)
	if g.Geometry.Decode && (len(live) > 0 || len(decoding) > 0) && rng.Intn(8) == 0 {
		if len(decoding) > 0 && (len(live) == 0 || rng.Intn(2) == 0) {
			if g.Reads && rng.Intn(2) == 0 {
				return Step{Op: OpRead, Batch: []int{decoding[rng.Intn(len(decoding))]}}
			}
			return Step{Op: OpFinish, Req: decoding[rng.Intn(len(decoding))]}
		}
		return Step{Op: OpTransfer, Req: live[rng.Intn(len(live))]}
	}
	P := g.Geometry.PageSize
	prompt := g.Prompt
	if prompt == 0 {
		prompt = 3 * P
	}
	if g.Reads && len(live) > 0 && rng.Intn(6) == 0 {
		batch := slices.Clone(live)
		rng.Shuffle(len(batch), func(i, j int) { batch[i], batch[j] = batch[j], batch[i] })
		return Step{Op: OpRead, Batch: batch[:1+rng.Intn(min(len(live), MaxRead))]}
	}
	switch x := rng.Intn(100); {
	case len(live) == 0 || x < 22:
		as := []Arrival{g.arrival(rng, m, live, next, prompt)}
		for len(as) < 4 && rng.Intn(5) == 0 {
			as = append(as, g.arrival(rng, m, live, next, prompt)) // one prefill batch
		}
		return arriving(as)
	case x < 70:
		max := g.Geometry.Capacities[len(g.Geometry.Capacities)-1]
		b := 1 + rng.Intn(min(len(live), max))
		batch := slices.Clone(live)
		rng.Shuffle(len(batch), func(i, j int) { batch[i], batch[j] = batch[j], batch[i] })
		return Step{Op: OpDecode, Batch: batch[:b]}
	case x < 82:
		return Step{Op: OpFinish, Req: live[rng.Intn(len(live))]}
	case x < 88:
		return Step{Op: OpAbort, Req: live[rng.Intn(len(live))]}
	case g.NoEvict:
		return Step{Op: OpFinish, Req: live[rng.Intn(len(live))]}
	case len(out) > 0 && x < 95:
		return Step{Op: OpLoad, Req: out[rng.Intn(len(out))]}
	default:
		return Step{Op: OpEvict, Req: live[rng.Intn(len(live))]}
	}
}

// arrival draws a request's arrival: a prompt of up to prompt tokens,
// sharing a resident request's prefix one time in three.
func (g *Gen) arrival(rng *rand.Rand, m *model, live []int, next *int, prompt int) Arrival {
	a := Arrival{Req: *next, Tokens: 1 + rng.Intn(prompt)}
	if len(live) > 0 && rng.Intn(3) == 0 {
		src := m.reqs[live[rng.Intn(len(live))]]
		a.From = src.id
		a.Shared = 1 + rng.Intn(len(src.keys))
		a.Tokens = a.Shared + 1 + rng.Intn(max(1, prompt*2/3))
	}
	*next++
	return a
}
