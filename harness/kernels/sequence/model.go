package sequence

import (
	"fmt"
	"slices"
	"strings"
)

// The scheduler model: which request holds which page, where each step's
// tokens go, and what each token's row is. It needs no pool: Validate
// plays a case on it, and the target plays the same plan on the pool and
// on the shadow (shadow.go).

// rowKey names a token's row: the request whose prompt or decode produced
// it and its position. A token copied from a shared prefix keeps its
// source's key, so its bytes are the source's.
type rowKey struct{ Req, Pos int }

func (k rowKey) String() string { return fmt.Sprintf("r%d token %d", k.Req, k.Pos) }

// Request states.
const (
	resident = iota + 1
	evicted
	gone
	remote // transferred: its pages are the decode side's
)

type request struct {
	id     int
	state  int
	pages  []int    // the page table
	keys   []rowKey // per token
	shared int      // leading pages shared with another request
}

// holds reports whether the request holds pages: resident on the
// prefill side or transferred to the decode side.
func (r *request) holds() bool { return r.state == resident || r.state == remote }

// model is the scheduler's state.
type model struct {
	g     Geometry
	free  []int // a stack: the last page freed is the first reused
	dfree []int // the decode side's, its pages numbered from g.Pages
	refs  []int // per page (both sides), how many page tables hold it
	epoch []int // per page, how many times it was allocated
	reqs  map[int]*request
	// notes has plans carry their notes, which Describe prints: the
	// plans of validating, drawing and playing a case format none.
	notes bool
}

func newModel(g Geometry) *model {
	n := g.Pages
	if g.Decode {
		n *= 2
	}
	m := &model{g: g, refs: make([]int, n), epoch: make([]int, n), reqs: map[int]*request{}}
	for p := g.Pages - 1; p >= 1; p-- {
		m.free = append(m.free, p)
		if g.Decode {
			m.dfree = append(m.dfree, g.Pages+p)
		}
	}
	return m
}

// write is one store's row: the slot it lands in, its page, its request
// and its data's key.
type write struct {
	Slot int64
	Page int
	Req  int
	Key  rowKey
}

// storeOp is a step's store: eager (a prefill, a copy-on-write, a
// load-back) or a graph replay at a captured capacity.
type storeOp struct {
	Graph    bool
	Capacity int // graph: the captured capacity; eager: len(Rows)
	Rows     []write
}

// plan is what a step does, worked out before it is done.
type plan struct {
	step    int
	s       Step
	alloc   []int // pages allocated, in order, to s.Req (or the batch's requests: allocFor)
	owner   []int // per allocated page, its request
	frees   []int // pages whose last holder left
	store   *storeOp
	moved   []write // transfer: every token's row in its decode page
	src     []int   // transfer: the prefill pages, in page-table order
	cows    []int   // arrive: the pages copied on write
	note    string
	req     *request   // the request coming back or transferred (not yet in the model)
	arrived []*request // arrive: the requests admitted, in order
	tokens  []int      // decode: each batch request's new token count
}

func (m *model) take(n int) ([]int, error) { return takeFrom(m.free, n, "", m.g.Pages) }

func takeFrom(free []int, n int, side string, pages int) ([]int, error) {
	if n > len(free) {
		return nil, fmt.Errorf("needs %d free%s pages; %d are free (the pool has %d, page 0 reserved)", n, side, len(free), pages)
	}
	out := make([]int, n)
	for i := range out {
		out[i] = free[len(free)-1-i]
	}
	return out, nil
}

func pagesFor(tokens, p int) int { return (tokens + p - 1) / p }

func (m *model) resident(id int) (*request, error) {
	r := m.reqs[id]
	if r != nil && r.state == remote {
		return nil, fmt.Errorf("request r%d is on the decode side (transferred)", id)
	}
	if r == nil || r.state != resident {
		return nil, fmt.Errorf("request r%d is not resident", id)
	}
	return r, nil
}

// plan works out step i without changing the model.
func (m *model) plan(i int, s Step) (*plan, error) {
	p := &plan{step: i, s: s}
	var err error
	switch s.Op {
	case OpArrive:
		err = m.planArrive(p)
	case OpDecode:
		err = m.planDecode(p)
	case OpFinish, OpAbort, OpEvict:
		err = m.planLeave(p)
	case OpLoad:
		err = m.planLoad(p)
	case OpRead:
		err = m.planRead(p)
	case OpTransfer:
		err = m.planTransfer(p)
	default:
		err = fmt.Errorf("op %q: want arrive, decode, finish, abort, evict, load, read or transfer", s.Op)
	}
	if err != nil {
		return nil, err
	}
	return p, nil
}

func (m *model) planArrive(p *plan) error {
	s := p.s
	as := s.Arrivals()
	switch {
	case len(s.Batch) > 0:
		return fmt.Errorf("an arrival has no batch")
	case len(as) > MaxArrivals:
		return fmt.Errorf("%d arrivals in one step: want at most %d", len(as), MaxArrivals)
	}
	st := &storeOp{}
	taken := 0
	var notes []string
	for i, a := range as {
		if slices.ContainsFunc(as[:i], func(b Arrival) bool { return b.Req == a.Req }) {
			return fmt.Errorf("request r%d arrives twice in one step", a.Req)
		}
		r, cow, err := m.arrival(a, taken)
		if err != nil {
			if len(as) > 1 {
				return fmt.Errorf("r%d: %w", a.Req, err)
			}
			return err
		}
		own := r.pages[r.shared:]
		taken += len(own)
		p.alloc = append(p.alloc, own...)
		for range own {
			p.owner = append(p.owner, a.Req)
		}
		for pos := r.shared * m.g.PageSize; pos < a.Tokens; pos++ {
			pg := r.pages[pos/m.g.PageSize]
			st.Rows = append(st.Rows, write{Slot: m.g.Slot(pg, pos%m.g.PageSize), Page: pg, Req: a.Req, Key: r.keys[pos]})
		}
		p.arrived = append(p.arrived, r)
		if cow >= 0 {
			p.cows = append(p.cows, cow)
		}
		if !m.notes {
			continue
		}
		note := fmt.Sprintf("pages %v", r.pages)
		if r.shared > 0 {
			note += fmt.Sprintf(" (first %d shared)", r.shared)
		}
		if cow >= 0 {
			note += fmt.Sprintf(", page %d copied on write into page %d", cow, r.pages[r.shared])
		}
		if len(as) > 1 {
			note = fmt.Sprintf("r%d %s", a.Req, note)
		}
		notes = append(notes, note)
	}
	st.Capacity = len(st.Rows)
	p.store = st
	if m.notes {
		p.note = ": " + strings.Join(notes, "; ")
	}
	return nil
}

// arrival plans one request of an arrival step, after the step's earlier
// arrivals took skip pages: its page table (a shared prefix's full pages,
// then pages of its own) and its rows' keys, and the page a partial
// shared page is copied from (-1 for none).
func (m *model) arrival(a Arrival, skip int) (*request, int, error) {
	P := m.g.PageSize
	switch {
	case a.Req < 1 || m.reqs[a.Req] != nil:
		return nil, -1, fmt.Errorf("request r%d: want a new request id from 1", a.Req)
	case a.Tokens < 1 || a.Tokens > MaxTokens:
		return nil, -1, fmt.Errorf("%d prompt tokens: want 1..%d", a.Tokens, MaxTokens)
	}
	r := &request{id: a.Req, state: resident}
	cow := -1
	if a.From != 0 || a.Shared != 0 {
		src, err := m.resident(a.From)
		if err != nil {
			return nil, -1, fmt.Errorf("shares a prefix: %w", err)
		}
		if a.Shared < 1 || a.Shared >= a.Tokens || a.Shared > len(src.keys) {
			return nil, -1, fmt.Errorf("shares %d tokens: want 1..%d (fewer than its prompt, at most r%d's %d)",
				a.Shared, a.Tokens-1, a.From, len(src.keys))
		}
		r.shared = a.Shared / P
		r.pages = slices.Clone(src.pages[:r.shared])
		r.keys = slices.Clone(src.keys[:a.Shared])
		if a.Shared%P != 0 {
			cow = src.pages[r.shared]
		}
	}
	for pos := len(r.keys); pos < a.Tokens; pos++ {
		r.keys = append(r.keys, rowKey{a.Req, pos})
	}
	pages, err := m.take(skip + pagesFor(a.Tokens, P) - r.shared)
	if err != nil {
		return nil, -1, err
	}
	r.pages = append(r.pages, pages[skip:]...)
	return r, cow, nil
}

func (m *model) planDecode(p *plan) error {
	s, P := p.s, m.g.PageSize
	if len(s.Batch) == 0 {
		return fmt.Errorf("an empty batch")
	}
	c := m.g.capacityFor(len(s.Batch))
	if c == 0 {
		return fmt.Errorf("a batch of %d: more than the largest captured capacity %d", len(s.Batch), m.g.Capacities[len(m.g.Capacities)-1])
	}
	need := 0
	for i, id := range s.Batch {
		r, err := m.resident(id)
		if err != nil {
			return err
		}
		if slices.Contains(s.Batch[:i], id) {
			return fmt.Errorf("r%d twice in one batch", id)
		}
		if len(r.keys) >= MaxTokens {
			return fmt.Errorf("r%d holds %d tokens already", id, len(r.keys))
		}
		if len(r.keys)%P == 0 {
			need++
		}
	}
	pages, err := m.take(need)
	if err != nil {
		return err
	}
	st := &storeOp{Graph: true, Capacity: c}
	k := 0
	var alloc []string
	for _, id := range s.Batch {
		r := m.reqs[id]
		pos := len(r.keys)
		pg := 0
		if pos%P == 0 {
			pg = pages[k]
			k++
			p.alloc, p.owner = append(p.alloc, pg), append(p.owner, id)
			if m.notes {
				alloc = append(alloc, fmt.Sprintf("r%d gets page %d", id, pg))
			}
		} else {
			pg = r.pages[pos/P]
		}
		st.Rows = append(st.Rows, write{Slot: m.g.Slot(pg, pos%P), Page: pg, Req: id, Key: rowKey{id, pos}})
	}
	p.store = st
	if !m.notes {
		return nil
	}
	p.note = fmt.Sprintf(": graph of capacity %d", c)
	if len(alloc) > 0 {
		p.note += "; " + fmt.Sprint(alloc)
	}
	return nil
}

func (m *model) planRead(p *plan) error {
	s := p.s
	if len(s.Batch) == 0 || len(s.Batch) > MaxRead {
		return fmt.Errorf("a read of %d requests: want 1..%d", len(s.Batch), MaxRead)
	}
	for i, id := range s.Batch {
		if r := m.reqs[id]; r == nil || !r.holds() {
			return fmt.Errorf("request r%d holds no pages to read", id)
		}
		if slices.Contains(s.Batch[:i], id) {
			return fmt.Errorf("r%d twice in one read", id)
		}
	}
	return nil
}

// planTransfer moves a request's pages to the decode side: fresh decode
// pages, its prefill pages released (a shared one when its last holder
// goes).
func (m *model) planTransfer(p *plan) error {
	s := p.s
	if !m.g.Decode {
		return fmt.Errorf("a transfer needs a decode side: the geometry has none (decode: true)")
	}
	r, err := m.resident(s.Req)
	if err != nil {
		return err
	}
	dst, err := takeFrom(m.dfree, len(r.pages), " decode-side", m.g.Pages)
	if err != nil {
		return err
	}
	p.alloc, p.src = dst, slices.Clone(r.pages)
	for _, pg := range r.pages {
		if m.refs[pg] == 1 {
			p.frees = append(p.frees, pg)
		}
	}
	x := &request{id: r.id, state: remote, keys: r.keys, pages: dst}
	for pos, k := range r.keys {
		pg := dst[pos/m.g.PageSize]
		p.moved = append(p.moved, write{Slot: m.g.Slot(pg, pos%m.g.PageSize), Page: pg, Req: r.id, Key: k})
	}
	for range dst {
		p.owner = append(p.owner, r.id)
	}
	p.req = x
	if !m.notes {
		return nil
	}
	p.note = fmt.Sprintf(": prefill pages %v to decode pages %v", r.pages, dst)
	if len(p.frees) > 0 {
		p.note += fmt.Sprintf("; frees %v", p.frees)
	}
	return nil
}

func (m *model) planLeave(p *plan) error {
	s := p.s
	r := m.reqs[s.Req]
	switch {
	case r == nil || r.state == gone:
		return fmt.Errorf("request r%d has not arrived or has left", s.Req)
	case s.Op != OpAbort && r.state == evicted:
		return fmt.Errorf("request r%d is evicted: load it back first (or abort it)", s.Req)
	case s.Op == OpEvict && r.state == remote:
		return fmt.Errorf("request r%d is on the decode side: evictions are the prefill side's", s.Req)
	}
	if r.holds() {
		for _, pg := range r.pages {
			if m.refs[pg] == 1 {
				p.frees = append(p.frees, pg)
			}
		}
	}
	if len(p.frees) > 0 && m.notes {
		p.note = fmt.Sprintf(": frees pages %v", p.frees)
	}
	return nil
}

func (m *model) planLoad(p *plan) error {
	s := p.s
	r := m.reqs[s.Req]
	if r == nil || r.state != evicted {
		return fmt.Errorf("request r%d is not evicted", s.Req)
	}
	pages, err := m.take(pagesFor(len(r.keys), m.g.PageSize))
	if err != nil {
		return err
	}
	x := &request{id: r.id, state: resident, keys: r.keys, pages: pages}
	p.alloc, p.req = pages, x
	st := &storeOp{}
	for pos, k := range r.keys {
		pg := pages[pos/m.g.PageSize]
		st.Rows = append(st.Rows, write{Slot: m.g.Slot(pg, pos%m.g.PageSize), Page: pg, Req: r.id, Key: k})
	}
	for range pages {
		p.owner = append(p.owner, r.id)
	}
	st.Capacity = len(st.Rows)
	p.store = st
	if m.notes {
		p.note = fmt.Sprintf(": into pages %v", pages)
	}
	return nil
}

// clone is a copy of m that shares no state with it.
func (m *model) clone() *model {
	x := *m
	x.free, x.dfree = slices.Clone(m.free), slices.Clone(m.dfree)
	x.refs, x.epoch = slices.Clone(m.refs), slices.Clone(m.epoch)
	x.reqs = make(map[int]*request, len(m.reqs))
	for id, r := range m.reqs {
		y := *r
		y.pages, y.keys = slices.Clone(r.pages), slices.Clone(r.keys)
		x.reqs[id] = &y
	}
	return &x
}

// apply makes the planned step the model's state.
func (m *model) apply(p *plan) {
	if p.s.Op == OpTransfer {
		m.dfree = m.dfree[:len(m.dfree)-len(p.alloc)]
	} else {
		m.free = m.free[:len(m.free)-len(p.alloc)]
	}
	for _, pg := range p.alloc {
		m.refs[pg] = 1
		m.epoch[pg]++
	}
	switch p.s.Op {
	case OpArrive:
		for _, r := range p.arrived {
			for _, pg := range r.pages[:r.shared] {
				m.refs[pg]++
			}
			m.reqs[r.id] = r
		}
	case OpLoad:
		m.reqs[p.s.Req] = p.req
	case OpTransfer:
		for _, pg := range p.src {
			m.refs[pg]--
		}
		m.reqs[p.s.Req] = p.req
	case OpDecode:
		k := 0
		for _, id := range p.s.Batch {
			r := m.reqs[id]
			if len(r.keys)%m.g.PageSize == 0 {
				r.pages = append(r.pages, p.alloc[k])
				k++
			}
			r.keys = append(r.keys, rowKey{id, len(r.keys)})
		}
	case OpFinish, OpAbort, OpEvict:
		r := m.reqs[p.s.Req]
		if r.holds() {
			for _, pg := range r.pages {
				m.refs[pg]--
			}
		}
		r.pages, r.shared = nil, 0
		r.state = gone
		if p.s.Op == OpEvict {
			r.state = evicted
		}
	}
	for _, pg := range p.frees {
		if pg >= m.g.Pages {
			m.dfree = append(m.dfree, pg)
		} else {
			m.free = append(m.free, pg)
		}
	}
}
