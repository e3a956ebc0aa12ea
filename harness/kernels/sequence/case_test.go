package sequence

import (
	"math/rand"
	"slices"
	"strings"
	"testing"

	"github.com/kvharness/kvharness/harness/internal/kindtest"
)

// TestValidateRefuses: a sequence the scheduler could not take is an
// error naming the step and why.
func TestValidateRefuses(t *testing.T) {
	g := testGeometry
	for _, c := range []struct {
		steps []Step
		want  string
	}{
		{[]Step{decode(1)}, "step 0 (decode r1): request r1 is not resident"},
		{[]Step{arrive(1, 3), arrive(1, 3)}, "want a new request id"},
		{[]Step{arrive(1, 3), share(2, 3, 1, 3)}, "shares 3 tokens"},
		{[]Step{arrive(1, 3), decode(1, 1)}, "r1 twice"},
		{[]Step{arrive(1, 200)}, "free pages"},
		{[]Step{arrive(1, 3), op(OpLoad, 1)}, "not evicted"},
		{[]Step{arrive(1, 3), op(OpEvict, 1), op(OpFinish, 1)}, "load it back first"},
		{[]Step{arrive(1, 3), op(OpFinish, 1), decode(1)}, "not resident"},
		{[]Step{{Op: "sleep"}}, `op "sleep"`},
	} {
		err := (&Case{Geometry: g, Steps: c.steps}).Validate(0)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v: %v; want %q", c.steps, err, c.want)
		}
	}
	if err := (&Case{Geometry: Geometry{HeadDims: []int{64}, PageSize: 4, Pages: 8, Capacities: []int{4, 2}}, Steps: []Step{arrive(1, 1)}}).Validate(0); err == nil {
		t.Error("descending capacities accepted")
	}
}

// TestModelPages: the allocator hands out the last page freed first, a
// shared prefix's full pages are shared and its partial page copied (r2
// holds page 1 with r1, and its own page 3 starts with r1's token 4), and
// a decode crossing a page boundary takes a page.
func TestModelPages(t *testing.T) {
	m := newModel(testGeometry)
	play := func(s Step) *plan {
		p, err := m.plan(0, s)
		if err != nil {
			t.Fatal(err)
		}
		m.apply(p)
		return p
	}
	if p := play(arrive(1, 6)); !equal(p.alloc, []int{1, 2}) || len(p.store.Rows) != 6 {
		t.Fatalf("arrive: pages %v, %d rows", p.alloc, len(p.store.Rows))
	}
	if p := play(share(2, 8, 1, 5)); !equal(p.alloc, []int{3}) || !equal(p.cows, []int{2}) || len(p.store.Rows) != 4 || m.refs[1] != 2 {
		t.Fatalf("shared arrive: pages %v, copied %v, %d rows, page 1 held %d times", p.alloc, p.cows, len(p.store.Rows), m.refs[1])
	}
	if p := play(op(OpFinish, 1)); !equal(p.frees, []int{2}) {
		t.Fatalf("finish r1 frees %v; want [2] (page 1 is still r2's)", p.frees)
	}
	if p := play(arrive(3, 1)); !equal(p.alloc, []int{2}) {
		t.Fatalf("arrive r3 takes %v; want the page just freed, [2]", p.alloc)
	}
	if p := play(decode(3, 2)); p.store.Capacity != 2 || !equal(p.alloc, []int{4}) || p.store.Rows[1].Slot != testGeometry.Slot(4, 0) {
		t.Fatalf("decode: capacity %d, pages %v, rows %+v", p.store.Capacity, p.alloc, p.store.Rows)
	}
}

func equal(a, b []int) bool { return slices.Equal(a, b) }

// TestShrinkSmallerAndValid: every shrink of a drawn sequence is valid
// and smaller in the order Shrink's doc gives (so shrinking ends).
func TestShrinkSmallerAndValid(t *testing.T) {
	rng := rand.New(rand.NewSource(2))
	gen := &Gen{Geometry: testGeometry}
	for range 30 {
		c := gen.Draw(rng)
		kindtest.Shrinks(t, c, 0, Shrink, func(x, c *Case) bool {
			return slices.Compare(x.measure(), c.measure()) < 0
		})
	}
}

// measure is a sequence's size, compared first to last: steps,
// requests, batch rows, prompt tokens, shared tokens, layers, captured
// capacities and their sum, pages, the decode side, request ids.
func (c *Case) measure() []int {
	rows, tokens, shared, ids := 0, 0, 0, 0
	for _, s := range c.Steps {
		rows += len(s.Batch)
		for _, r := range s.Batch {
			ids += r
		}
		for _, a := range s.Arrivals() {
			tokens += a.Tokens
			shared += a.Shared
			ids += a.Req + a.From
		}
		if s.Op != OpArrive {
			ids += s.Req
		}
	}
	g := c.Geometry
	decode := 0
	if g.Decode {
		decode = 1
	}
	sum := 0
	for _, cp := range g.Capacities {
		sum += cp
	}
	return []int{len(c.Steps), c.Requests(), rows, tokens, shared, len(g.HeadDims), len(g.Capacities), sum, g.Pages, decode, ids}
}

// TestJSONRoundTrip: a sequence survives a repro file.
func TestJSONRoundTrip(t *testing.T) {
	c := (&Gen{Geometry: testGeometry}).Draw(rand.New(rand.NewSource(4)))
	if back := kindtest.JSONRoundTrip(t, &Kind, c, 0); back.String() != c.String() {
		t.Fatalf("round trip: %v, want %v", back, c)
	}
}

// TestDrawnSequencesAreLong: every drawn sequence has at least the
// generator's least number of steps (the controls' campaign counts on
// sequences of at least 20 steps), on both rows' generators.
func TestDrawnSequencesAreLong(t *testing.T) {
	rng := rand.New(rand.NewSource(5))
	for _, noEvict := range []bool{true, false} {
		gen := &Gen{Geometry: testGeometry, NoEvict: noEvict}
		for range 2000 {
			if c := gen.Draw(rng); len(c.Steps) < DefaultSteps {
				t.Fatalf("a drawn sequence of %d steps: %v", len(c.Steps), c)
			}
		}
	}
}

// TestBatchedArrivals: one step admitting several requests allocates the
// pages the same arrivals one step each would (in order, the last freed
// first), stores every prompt in one eager store, and may share a
// prefix of a request admitted before the step, never of one in it.
func TestBatchedArrivals(t *testing.T) {
	apart := []Step{arrive(1, 6), op(OpFinish, 1), arrive(2, 5), share(3, 6, 2, 4), arrive(4, 1)}
	batched := []Step{arrive(1, 6), op(OpFinish, 1), arriving([]Arrival{{Req: 2, Tokens: 5}, {Req: 3, Tokens: 6, From: 2, Shared: 4}})}
	if err := (&Case{Geometry: testGeometry, Steps: batched}).Validate(0); err == nil {
		t.Fatal("r3 shares r2's prefix in the step r2 arrives: accepted")
	}
	batched = []Step{arrive(1, 6), op(OpFinish, 1), arriving([]Arrival{{Req: 2, Tokens: 5}, {Req: 4, Tokens: 1}})}
	pages := func(steps []Step) map[int][]int {
		m := newModel(testGeometry)
		for i, s := range steps {
			p, err := m.plan(i, s)
			if err != nil {
				t.Fatalf("%v: %v", s, err)
			}
			if len(s.More) > 0 && (p.store == nil || len(p.store.Rows) != 6 || p.store.Graph) {
				t.Fatalf("%v: want one eager store of both prompts (6 rows), got %+v", s, p.store)
			}
			m.apply(p)
		}
		out := map[int][]int{}
		for id, r := range m.reqs {
			out[id] = r.pages
		}
		return out
	}
	one := pages(batched)
	two := pages(slices.Delete(slices.Clone(apart), 3, 4))
	for _, id := range []int{2, 4} {
		if !equal(one[id], two[id]) {
			t.Errorf("r%d: pages %v batched, %v one step each", id, one[id], two[id])
		}
	}
	for _, c := range []struct {
		s    Step
		want string
	}{
		{arriving([]Arrival{{Req: 2, Tokens: 1}, {Req: 2, Tokens: 3}}), "r2 arrives twice"},
		{arriving([]Arrival{{Req: 2, Tokens: 1}, {Req: 1, Tokens: 3}}), "r1: request r1: want a new request id"},
		{arriving([]Arrival{{Req: 2, Tokens: 1}, {Req: 3, Tokens: 90}}), "r3: needs"},
	} {
		err := (&Case{Geometry: testGeometry, Steps: []Step{arrive(1, 6), c.s}}).Validate(0)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v: %v; want %q", c.s, err, c.want)
		}
	}
	c := &Case{Geometry: testGeometry, Steps: batched}
	if back := kindtest.JSONRoundTrip(t, &Kind, c, 0); back.String() != c.String() {
		t.Fatalf("round trip: %v, want %v", back, c)
	}
	if _, err := Encode(c, testGeometry); err == nil || !strings.Contains(err.Error(), "admits 2 requests") {
		t.Errorf("Encode of a batched arrival: %v; want an error naming it", err)
	}
}

// TestCheckpointsValidateAsValidate: Shrink's validation from checkpoints
// gives Validate's verdict, error and all, on candidates valid and
// invalid, of bases valid and invalid: a step dropped, a run dropped, a
// step's request or prompt or batch changed, the geometry changed.
func TestCheckpointsValidateAsValidate(t *testing.T) {
	rng := rand.New(rand.NewSource(3))
	decode := testGeometry
	decode.Decode = true
	valid, invalid := 0, 0
	for _, g := range []Geometry{testGeometry, decode} {
		gen := &Gen{Geometry: g, Steps: 40}
		for range 20 {
			base := gen.Draw(rng)
			for _, c := range []*Case{base, mutate(rng, base)} {
				cp := newCheckpoints(c)
				for range 60 {
					x := mutate(rng, c)
					want, got := x.Validate(0), cp.validate(x)
					if (want == nil) != (got == nil) || (want != nil && want.Error() != got.Error()) {
						t.Fatalf("%v\nfrom %v:\nValidate: %v\ncheckpoints: %v", x, c, want, got)
					}
					if want == nil {
						valid++
					} else {
						invalid++
					}
				}
			}
		}
	}
	if valid < 100 || invalid < 100 {
		t.Errorf("%d valid and %d invalid candidates: want both kinds tried", valid, invalid)
	}
}

// mutate is c with one random change.
func mutate(rng *rand.Rand, c *Case) *Case {
	x := c.Clone()
	n := len(x.Steps)
	i := rng.Intn(n)
	switch rng.Intn(6) {
	case 0:
		x.Steps = slices.Delete(x.Steps, i, i+1)
	case 1:
		x.Steps = slices.Delete(x.Steps, i, i+rng.Intn(n-i)+1)
	case 2:
		x.Steps[i].Req = rng.Intn(8)
	case 3:
		x.Steps[i].Tokens = rng.Intn(20)
	case 4:
		if len(x.Steps[i].Batch) > 0 {
			x.Steps[i].Batch = slices.Delete(x.Steps[i].Batch, 0, 1)
		} else {
			x.Steps[i].Batch = []int{1 + rng.Intn(4)}
		}
	case 5:
		x.Geometry.Pages = max(2, x.Geometry.Pages-rng.Intn(4))
	}
	return x
}
