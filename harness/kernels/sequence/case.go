package sequence

import (
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/kvharness/kvharness/harness/layout"
)

// Geometry is the engine a sequence runs in: one bf16 pool per layer (a
// layer's K or V cache; layers may differ in head dimension, as a model's
// KV and index-K caches do), pages of PageSize tokens, Pages pages a pool
// with page 0 the reserved padding sink (never allocated, never judged:
// an engine's dummy slot), and the batch sizes its decode graphs were
// captured at.
type Geometry struct {
	HeadDims   []int `json:"head_dims"` // one pool per layer
	PageSize   int   `json:"page_size"`
	Pages      int   `json:"pages"`
	Capacities []int `json:"capacities"` // ascending
	// Decode adds a decode side: a second pool per layer, its pages
	// numbered from Pages on (page Pages its padding sink), which transfer
	// steps move requests to.
	Decode bool `json:"decode,omitempty"`
}

// LayoutName is the layout of every pool: bf16 rows, whose bytes a
// correct store leaves exactly.
const LayoutName = "bf16"

// Limits of a geometry and a case: what a repro file may ask for.
const (
	MaxLayers   = 4
	MaxCapacity = 512
	MaxSteps    = 4096
	MaxTokens   = 1 << 16
)

// equal reports whether g and h are the same geometry.
func (g Geometry) equal(h Geometry) bool {
	return slices.Equal(g.HeadDims, h.HeadDims) && g.PageSize == h.PageSize && g.Pages == h.Pages &&
		slices.Equal(g.Capacities, h.Capacities) && g.Decode == h.Decode
}

// Validate checks the geometry.
func (g Geometry) Validate() error {
	switch {
	case len(g.HeadDims) < 1 || len(g.HeadDims) > MaxLayers:
		return fmt.Errorf("%d layers (head_dims): want 1..%d", len(g.HeadDims), MaxLayers)
	case g.PageSize < 1 || g.PageSize > 1024:
		return fmt.Errorf("page size %d: want 1..1024", g.PageSize)
	case g.Pages < 2 || g.Pages > 1<<24:
		return fmt.Errorf("%d pages: want 2..%d (page 0 is the padding sink)", g.Pages, 1<<24)
	case len(g.Capacities) < 1:
		return fmt.Errorf("no captured capacities: want at least one decode batch size")
	}
	for _, d := range g.HeadDims {
		if d < 8 || d > 1024 || d%8 != 0 {
			return fmt.Errorf("head dim %d: want a multiple of 8 in 8..1024", d)
		}
	}
	for i, c := range g.Capacities {
		if c < 1 || c > MaxCapacity || (i > 0 && c <= g.Capacities[i-1]) {
			return fmt.Errorf("capacities %v: want ascending sizes in 1..%d", g.Capacities, MaxCapacity)
		}
	}
	return nil
}

// Layout is layer i's layout.
func (g Geometry) Layout(i int) (*layout.Layout, error) {
	return layout.Builtin(LayoutName, g.HeadDims[i], g.PageSize)
}

// PoolTokens is one pool's slots.
func (g Geometry) PoolTokens() int { return g.Pages * g.PageSize }

// Slot is the first slot of page p plus off.
func (g Geometry) Slot(p, off int) int64 { return int64(p*g.PageSize + off) }

// Key names the geometry for a target cache.
func (g Geometry) Key() string { return g.String() }

func (g Geometry) String() string {
	s := fmt.Sprintf("bf16 pools of head dims %v, %d pages of %d tokens (%d slots each), graphs captured at %v",
		g.HeadDims, g.Pages, g.PageSize, g.PoolTokens(), g.Capacities)
	if g.Decode {
		s += fmt.Sprintf("; a decode side of the same pools (pages %d..%d)", g.Pages, 2*g.Pages-1)
	}
	return s
}

// capacityFor is the captured capacity a decode batch of n replays at: the
// smallest at least n, or 0 when n exceeds them all.
func (g Geometry) capacityFor(n int) int {
	for _, c := range g.Capacities {
		if c >= n {
			return c
		}
	}
	return 0
}

// Op is what a step does.
type Op string

// The steps of a sequence, as an engine's scheduler takes them.
const (
	// OpArrive admits request Req with Tokens prompt tokens: its pages are
	// allocated and its prompt stored (a prefill, eager). With From set it
	// shares From's first Shared tokens (a prefix-cache hit): the full
	// pages are shared, a partial one is copied (copy-on-write: its tokens
	// stored again into a page of its own). More admits other requests in
	// the same prefill batch, after Req: pages allocated in that order,
	// every prompt stored by one eager store.
	OpArrive Op = "arrive"
	// OpDecode appends one token to each request of Batch, stored by the
	// graph captured at the smallest capacity that holds the batch: the
	// static slot and row tensors keep the last replay's entries past the
	// batch (padding by count, as a replay sees it).
	OpDecode Op = "decode"
	// OpFinish frees a request's pages (a shared page when its last holder
	// goes).
	OpFinish Op = "finish"
	// OpAbort frees a request's pages mid-flight, as a client's cancel does.
	OpAbort Op = "abort"
	// OpEvict copies a request's pages to the host and frees them; the
	// request waits, its pages don't-care.
	OpEvict Op = "evict"
	// OpLoad brings an evicted request back into fresh pages: its host copy
	// stored by the plugin's store kernel (a load-back).
	OpLoad Op = "load"
	// OpRead runs the plugin's read kernel over each request of Batch:
	// every token of its page table scored against a query, all of them
	// returned in order (an attention or indexer read between steps). A
	// plugin without a read kernel skips it.
	OpRead Op = "read"
	// OpTransfer sends a resident request's pages to the decode side
	// through the plugin's transfer kernel (a finished prefill handed to
	// a decode server): fresh decode pages, its prefill pages released.
	// It lives on there: read, finished or aborted.
	OpTransfer Op = "transfer"
)

// MaxRead is the most requests one read step reads.
const MaxRead = 16

// MaxArrivals is the most requests one arrival step admits.
const MaxArrivals = 64

// Step is one scheduler step.
type Step struct {
	Op     Op    `json:"op"`
	Req    int   `json:"req,omitempty"`
	Tokens int   `json:"tokens,omitempty"`
	From   int   `json:"from,omitempty"`
	Shared int   `json:"shared,omitempty"`
	Batch  []int `json:"batch,omitempty"`
	// More: an arrival's other requests, admitted in the same prefill
	// batch after Req.
	More []Arrival `json:"more,omitempty"`
}

// Arrival is one request an arrival step admits: its prompt tokens and
// the prefix it shares, if any.
type Arrival struct {
	Req    int `json:"req"`
	Tokens int `json:"tokens"`
	From   int `json:"from,omitempty"`
	Shared int `json:"shared,omitempty"`
}

// equal reports whether s and t are the same step.
func (s Step) equal(t Step) bool {
	return s.Op == t.Op && s.Req == t.Req && s.Tokens == t.Tokens && s.From == t.From && s.Shared == t.Shared &&
		slices.Equal(s.Batch, t.Batch) && slices.Equal(s.More, t.More)
}

func (a Arrival) String() string {
	if a.From != 0 {
		return fmt.Sprintf("r%d %d tokens (shares r%d's first %d)", a.Req, a.Tokens, a.From, a.Shared)
	}
	return fmt.Sprintf("r%d %d tokens", a.Req, a.Tokens)
}

// Arrivals lists the requests an arrival step admits, Req first; nil for
// another op.
func (s Step) Arrivals() []Arrival {
	if s.Op != OpArrive {
		return nil
	}
	return append([]Arrival{{Req: s.Req, Tokens: s.Tokens, From: s.From, Shared: s.Shared}}, s.More...)
}

// arriving is an arrival step admitting as (at least one).
func arriving(as []Arrival) Step {
	a := as[0]
	s := Step{Op: OpArrive, Req: a.Req, Tokens: a.Tokens, From: a.From, Shared: a.Shared}
	if len(as) > 1 {
		s.More = slices.Clone(as[1:])
	}
	return s
}

func (s Step) String() string {
	switch s.Op {
	case OpArrive:
		as := make([]string, 0, 1+len(s.More))
		for _, a := range s.Arrivals() {
			as = append(as, a.String())
		}
		return "arrive " + strings.Join(as, ", ")
	case OpDecode, OpRead:
		rs := make([]string, len(s.Batch))
		for i, r := range s.Batch {
			rs[i] = fmt.Sprintf("r%d", r)
		}
		return string(s.Op) + " " + strings.Join(rs, ",")
	}
	return fmt.Sprintf("%s r%d", s.Op, s.Req)
}

// Case is a sequence: a geometry and the scheduler's steps. Page
// allocation is the harness's, deterministic (last freed, first reused,
// as engines' free lists are), so the steps alone say which page every
// token lands in.
type Case struct {
	Geometry Geometry `json:"geometry"`
	Steps    []Step   `json:"steps"`
}

// Clone returns a deep copy.
func (c *Case) Clone() *Case {
	x := &Case{Geometry: c.Geometry, Steps: slices.Clone(c.Steps)}
	x.Geometry.HeadDims = slices.Clone(c.Geometry.HeadDims)
	x.Geometry.Capacities = slices.Clone(c.Geometry.Capacities)
	for i := range x.Steps {
		x.Steps[i].Batch = slices.Clone(x.Steps[i].Batch)
		x.Steps[i].More = slices.Clone(x.Steps[i].More)
	}
	return x
}

// Requests counts the requests that arrive.
func (c *Case) Requests() int {
	n := 0
	for _, s := range c.Steps {
		n += len(s.Arrivals())
	}
	return n
}

// Validate checks the case by playing it on a model without a pool: every
// step must be one the scheduler could take (a request arrives once,
// decodes and leaves only while resident, a batch fits a captured
// capacity, the pool has the pages). slots is unused: a sequence brings
// its geometry.
func (c *Case) Validate(int) error {
	if err := c.Geometry.Validate(); err != nil {
		return fmt.Errorf("geometry: %w", err)
	}
	if len(c.Steps) == 0 || len(c.Steps) > MaxSteps {
		return fmt.Errorf("%d steps: want 1..%d", len(c.Steps), MaxSteps)
	}
	m := newModel(c.Geometry)
	return m.play(c.Steps, 0)
}

// play plans and applies steps[from:] on m, which holds the state after
// steps[:from].
func (m *model) play(steps []Step, from int) error {
	for i := from; i < len(steps); i++ {
		p, err := m.plan(i, steps[i])
		if err != nil {
			return fmt.Errorf("step %d (%v): %w", i, steps[i], err)
		}
		m.apply(p)
	}
	return nil
}

// String is a one-line summary.
func (c *Case) String() string {
	steps := make([]string, len(c.Steps))
	for i, s := range c.Steps {
		steps[i] = s.String()
	}
	return fmt.Sprintf("%d steps, %d requests: %s", len(c.Steps), c.Requests(), strings.Join(steps, "; "))
}

// Describe writes the case in full for a report: a line per step.
func (c *Case) Describe(w io.Writer, indent string) {
	fmt.Fprintf(w, "%ssequence of %d steps, %d requests\n", indent, len(c.Steps), c.Requests())
	fmt.Fprintf(w, "%s  geometry: %s\n", indent, c.Geometry)
	m := newModel(c.Geometry)
	m.notes = true
	for i, s := range c.Steps {
		p, err := m.plan(i, s)
		if err != nil {
			fmt.Fprintf(w, "%s  step %d: %v (invalid: %v)\n", indent, i, s, err)
			return
		}
		m.apply(p)
		fmt.Fprintf(w, "%s  step %d: %v%s\n", indent, i, s, p.note)
	}
}
