package sequence

import (
	"bytes"
	"cmp"
	"context"
	"encoding/binary"
	"fmt"
	"slices"
	"time"

	"github.com/kvharness/kvharness/harness/arena"
	"github.com/kvharness/kvharness/harness/cuda"
	"github.com/kvharness/kvharness/harness/layout"
	"github.com/kvharness/kvharness/harness/oracle"
	"github.com/kvharness/kvharness/harness/plugin"
	"github.com/kvharness/kvharness/harness/pool"
	"github.com/kvharness/kvharness/harness/protocol/kvpb"
	"github.com/kvharness/kvharness/harness/rundir"
	"github.com/kvharness/kvharness/harness/target"
)

// Config says what a sequence target attaches.
type Config struct {
	Variant  string
	Geometry Geometry
	Seed     int64         // background seed
	Backend  arena.Backend // where the pools live (arena.SHM{}: host shared memory)
	// Timing, when set, adds the time spent in the plugin's calls and in
	// the ownership check.
	Timing *Timing
	// PortableDigest digests host pages with the device kernel's function
	// (pageDigest) instead of the process's hash: the CUDA path's check,
	// on the CPU.
	PortableDigest bool
}

// Timing splits a run's time: the plugin's store calls (staging
// included) and the ownership check (digests, diffs, snapshots).
type Timing struct {
	Steps              int
	Store, Read, Check time.Duration
}

// EagerChunk is the most rows one eager store call carries: a longer
// prompt or load-back is stored in several calls, one after another.
const EagerChunk = 256

// Target is a plugin attached to a sequence arena: a bf16 pool per layer,
// and staging for the eager stores and for each captured capacity's
// static slot and row tensors, which live for the target's life as a
// captured graph's do.
type Target struct {
	Config
	target.Base
	layouts   []*layout.Layout
	slotBits  int
	eagerLoc  int   // staging offsets
	eagerRow  []int // per layer
	graphLoc  []int // per capacity
	graphRow  [][]int
	direct    []byte   // the pool region's bytes when the memory is the host's (SHM)
	salt      uint64   // this check's rows (rows.go)
	poison    [][]byte // per layer: what a freed page is filled with
	poisonFP  []uint64
	checks    uint64
	dig       digester            // where page digests are computed (digest.go)
	sum       func([]byte) uint64 // the same digest, on the shadow's bytes
	reads     bool                // the plugin serves a read kernel: read steps call it
	transfers bool                // the plugin serves a transfer kernel: transfer steps call it
	rd        readStaging         // read.go
}

// Open describes the plugin (it must store every layer's bf16 layout as
// the layout has it), plans and fills the arena and attaches.
func Open(ctx context.Context, p *plugin.Plugin, dir *rundir.Dir, cfg Config) (*Target, error) {
	if cfg.Backend == nil {
		return nil, arena.ErrNoBackend
	}
	g := cfg.Geometry
	if err := g.Validate(); err != nil {
		return nil, fmt.Errorf("sequence geometry: %w", err)
	}
	t := &Target{Config: cfg, Base: target.Base{Plugin: p, Variant: cfg.Variant}}
	var err error
	if t.reads, err = servesRead(ctx, p, cfg.Variant, g); err != nil {
		return nil, err
	}
	var specs []pool.Spec
	for i := range g.HeadDims {
		l, err := g.Layout(i)
		if err != nil {
			return nil, err
		}
		dec, bad, err := target.Declared(ctx, p, storeKind, cfg.Variant, l)
		if err != nil {
			return nil, err
		}
		if bad != nil {
			return nil, fmt.Errorf("%w: plugin %s declares another geometry for %s (D=%d): %s", target.ErrUnsupported, p.Name, l.Name, l.HeadDim, bad.Detail)
		}
		t.slotBits = dec.SlotBits
		t.layouts = append(t.layouts, l)
		specs = append(specs, pool.Spec{Name: fmt.Sprintf("L%d", i), Layout: l, Slots: g.PoolTokens()})
	}
	if g.Decode {
		if t.transfers, err = servesTransfer(ctx, p, cfg.Variant, g); err != nil {
			return nil, err
		}
		specs = decodeSpecs(specs)
	}
	if err := t.PlanAndAttach(ctx, func() error { return t.plan(dir, specs) }); err != nil {
		return nil, err
	}
	return t, nil
}

func (t *Target) slotBytes() int { return t.slotBits / 8 }

func (t *Target) plan(dir *rundir.Dir, specs []pool.Spec) error {
	g := t.Geometry
	off := 0
	take := func(n int) int {
		at := off
		off += (n + pool.Alignment - 1) / pool.Alignment * pool.Alignment
		return at
	}
	t.eagerLoc = take(EagerChunk * t.slotBytes())
	for _, l := range t.layouts {
		t.eagerRow = append(t.eagerRow, take(EagerChunk*l.BytesPerToken()))
	}
	for _, c := range g.Capacities {
		t.graphLoc = append(t.graphLoc, take(c*t.slotBytes()))
		var rows []int
		for _, l := range t.layouts {
			rows = append(rows, take(c*l.BytesPerToken()))
		}
		t.graphRow = append(t.graphRow, rows)
	}
	if t.reads {
		t.planReads(take)
	}
	geo, err := pool.Plan(specs, off)
	if err != nil {
		return err
	}
	shift := geo.Staging.Off
	t.eagerLoc += shift
	for i := range t.eagerRow {
		t.eagerRow[i] += shift
	}
	t.rd.shift(shift)
	for i := range t.graphLoc {
		t.graphLoc[i] += shift
		for j := range t.graphRow[i] {
			t.graphRow[i][j] += shift
		}
	}
	if err := t.Base.Plan(dir, t.Backend, geo, target.FillRegions(geo, t.Seed)); err != nil {
		return err
	}
	for l, lay := range t.layouts {
		t.poison = append(t.poison, pool.Background(uint64(mix(uint64(t.Seed)^0x706f69736f6e)), l*lay.PageBytes(), lay.PageBytes()))
		t.poisonFP = append(t.poisonFP, fingerprint(t.poison[l]))
	}
	if h, ok := t.Mem().(interface{ Bytes() []byte }); ok {
		t.direct = h.Bytes()
	}
	return t.planDigests()
}

// planDigests chooses where page digests are computed: in place on the
// host (the process's hash, or pageDigest when the configuration asks
// for the device's function), by digest.cu on a CUDA arena.
func (t *Target) planDigests() error {
	if t.dig != nil {
		t.dig.close()
	}
	t.dig, t.sum = hostDigests{fingerprint}, fingerprint
	if t.PortableDigest {
		t.dig, t.sum = hostDigests{pageDigest}, pageDigest
	}
	c, ok := t.Backend.(arena.CUDA)
	m, onDevice := t.Mem().(interface{ Ptr() cuda.Ptr })
	if t.direct != nil || !ok || !onDevice {
		return nil
	}
	dd, err := newDeviceDigests(c.Dev, m.Ptr())
	if err != nil {
		return err
	}
	t.dig, t.sum = dd, pageDigest
	return nil
}

// pageAt is the arena offset of layer l's page pg (a decode-side page
// numbered from Pages on is in the layer's decode pool).
func (t *Target) pageAt(l, pg int) int {
	n := t.layouts[l].PageBytes()
	if pg >= t.Geometry.Pages {
		return t.Pools.Regions[len(t.layouts)+l].Pool.Off + (pg-t.Geometry.Pages)*n
	}
	return t.Pools.Regions[l].Pool.Off + pg*n
}

// page reads layer l's page pg: the mapping itself on the host, a copy
// into buf elsewhere.
func (t *Target) page(l, pg int, buf []byte) ([]byte, error) {
	n := t.layouts[l].PageBytes()
	at := t.pageAt(l, pg)
	if t.direct != nil {
		return t.direct[at : at+n], nil
	}
	buf = buf[:n]
	return buf, t.Mem().ReadAt(buf, at)
}

// stage writes the rows' slots at loc (from row 0) and their data at each
// layer's rows.
func (t *Target) stage(ws []write, loc int, rows []int) error {
	sb := t.slotBytes()
	lb := make([]byte, len(ws)*sb)
	for i, w := range ws {
		if sb == 4 {
			binary.LittleEndian.PutUint32(lb[i*4:], uint32(int32(w.Slot)))
		} else {
			binary.LittleEndian.PutUint64(lb[i*8:], uint64(w.Slot))
		}
	}
	if err := t.Mem().WriteAt(lb, loc); err != nil {
		return err
	}
	for l, lay := range t.layouts {
		tok := lay.BytesPerToken()
		rb := make([]byte, len(ws)*tok)
		for i, w := range ws {
			rowBytes(rb[i*tok:(i+1)*tok], t.salt, l, w.Key)
		}
		if err := t.Mem().WriteAt(rb, rows[l]); err != nil {
			return err
		}
	}
	return nil
}

// request is one layer's store call.
func (t *Target) request(l, capacity, valid, loc, rows int, graph bool) *kvpb.StoreRequest {
	pad := kvpb.Padding_PADDING_NONE
	if graph {
		pad = kvpb.Padding_PADDING_COUNT
	}
	return &kvpb.StoreRequest{Pool: uint32(l), Capacity: uint32(capacity), Valid: uint32(valid), Padding: pad,
		RowsOffset: uint64(rows), LocOffset: uint64(loc), Graph: graph, SlotBits: uint32(t.slotBits)}
}

// capture is an engine's graph capture at start: every capacity replayed
// once with no valid row, its static slots all the padding sink (slot 0,
// page 0's) and its rows zero.
func (t *Target) capture(ctx context.Context) error {
	var reqs []*kvpb.StoreRequest
	for i, c := range t.Geometry.Capacities {
		if err := t.Mem().WriteAt(make([]byte, c*t.slotBytes()), t.graphLoc[i]); err != nil {
			return err
		}
		for l, lay := range t.layouts {
			if err := t.Mem().WriteAt(make([]byte, c*lay.BytesPerToken()), t.graphRow[i][l]); err != nil {
				return err
			}
			reqs = append(reqs, t.request(l, c, 0, t.graphLoc[i], t.graphRow[i][l], true))
		}
	}
	return storeBatch(ctx, t.Plugin, reqs)
}

// run sends a step's store: a graph replay at its capacity over the
// static tensors, or eager calls of at most EagerChunk rows.
func (t *Target) run(ctx context.Context, st *storeOp) error {
	if st.Graph {
		i := 0
		for t.Geometry.Capacities[i] != st.Capacity {
			i++
		}
		if err := t.stage(st.Rows, t.graphLoc[i], t.graphRow[i]); err != nil {
			return err
		}
		reqs := make([]*kvpb.StoreRequest, len(t.layouts))
		for l := range t.layouts {
			reqs[l] = t.request(l, st.Capacity, len(st.Rows), t.graphLoc[i], t.graphRow[i][l], true)
		}
		return storeBatch(ctx, t.Plugin, reqs)
	}
	for lo := 0; lo < len(st.Rows); lo += EagerChunk {
		chunk := st.Rows[lo:min(lo+EagerChunk, len(st.Rows))]
		if err := t.stage(chunk, t.eagerLoc, t.eagerRow); err != nil {
			return err
		}
		reqs := make([]*kvpb.StoreRequest, len(t.layouts))
		for l := range t.layouts {
			reqs[l] = t.request(l, len(chunk), len(chunk), t.eagerLoc, t.eagerRow[l], false)
		}
		if err := storeBatch(ctx, t.Plugin, reqs); err != nil {
			return err
		}
	}
	return nil
}

// Check plays the sequence: the capture, then each step on the plugin,
// the model and the shadow, and after each step the ownership check of
// every live page. It stops at the first step with a violation.
func (t *Target) Check(ctx context.Context, c *Case) (*Result, error) {
	if err := t.Ensure(ctx); err != nil {
		return nil, err
	}
	if err := t.capture(ctx); err != nil {
		return nil, err
	}
	t.checks++
	t.salt = mix(uint64(t.Seed) ^ t.checks<<32)
	pb := make([]int, len(t.layouts))
	for l, lay := range t.layouts {
		pb[l] = lay.PageBytes()
	}
	m, sh := newModel(c.Geometry), newShadow(c.Geometry, pb)
	sh.digest = t.sum
	res := &Result{}
	buf := make([]byte, maxOf(pb))
	tm := t.Timing
	for i, s := range c.Steps {
		p, err := m.plan(i, s)
		if err != nil {
			return nil, fmt.Errorf("step %d (%v): %w", i, s, err)
		}
		t0 := time.Now()
		var vs []Violation
		for k, pg := range p.alloc {
			now := make([][]byte, len(t.layouts))
			for l := range t.layouts {
				b, err := t.page(l, pg, buf)
				if err != nil {
					return nil, err
				}
				if sh.pages[pg].poisoned && fingerprint(b) != t.poisonFP[l] {
					vs = append(vs, sh.whileFree(i, l, pg, b, t.poison[l]))
					res.Differ++
				}
				now[l] = append([]byte(nil), b...)
			}
			sh.allocate(pg, p.owner[k], i, now)
		}
		t1 := time.Now()
		if p.store != nil {
			if err := t.run(ctx, p.store); err != nil {
				return nil, err
			}
		}
		if s.Op == OpTransfer {
			if err := t.transfer(ctx, p); err != nil {
				return nil, err
			}
		}
		t2 := time.Now()
		wroteNow, err := t.record(sh, m, p, i)
		if err != nil {
			return nil, err
		}
		m.apply(p)
		t3 := time.Now()
		if s.Op == OpRead && t.reads {
			found, err := t.readStep(ctx, sh, m, s, i)
			if err != nil {
				return nil, err
			}
			vs = append(vs, found...)
			res.Reads++
		}
		t4 := time.Now()
		res.Steps++
		found, checked, differ, err := t.judge(sh, i, wroteNow, buf)
		if err != nil {
			return nil, err
		}
		vs = append(vs, found...)
		res.Checked += checked
		res.Differ += differ
		if tm != nil {
			tm.Steps++
			tm.Store += t2.Sub(t1)
			tm.Read += t4.Sub(t3)
			tm.Check += t1.Sub(t0) + t3.Sub(t2) + time.Since(t4)
		}
		if len(vs) > 0 {
			res.Add(oracle.KeepPerKind(vs, Kinds, 4, nil)...)
			return res, nil
		}
	}
	return res, nil
}

// record plays the step's legal writes and frees on the shadow; a page
// freed is filled with poison (the seeded background the load kind fills
// its destinations with), so that a write landing in it before it is
// taken again shows when it is.
func (t *Target) record(sh *shadow, m *model, p *plan, step int) (map[int64]rowKey, error) {
	wroteNow := map[int64]rowKey{}
	for _, r := range p.arrived {
		for _, pg := range r.pages[:r.shared] {
			sh.share(pg)
		}
	}
	if p.s.Op == OpTransfer {
		for i, src := range p.src {
			sh.copyPage(src, p.alloc[i], step)
		}
		for _, w := range p.moved {
			wroteNow[w.Slot] = w.Key
		}
		sh.seal(p.alloc)
	}
	if p.store != nil {
		rows := p.store.Rows
		var touched []int
		row := make([][]byte, len(t.layouts))
		for l, lay := range t.layouts {
			row[l] = make([]byte, lay.BytesPerToken())
		}
		for _, w := range rows {
			for l := range t.layouts {
				rowBytes(row[l], t.salt, l, w.Key)
			}
			sh.wrote(w, step, row)
			wroteNow[w.Slot] = w.Key
			if len(touched) == 0 || touched[len(touched)-1] != w.Page {
				touched = append(touched, w.Page)
			}
		}
		sh.seal(touched)
	}
	if p.s.Op == OpFinish || p.s.Op == OpAbort || p.s.Op == OpEvict || p.s.Op == OpTransfer {
		if r := m.reqs[p.s.Req]; r.holds() {
			for _, pg := range r.pages {
				sh.release(pg, step)
				if sh.pages[pg].holders > 0 {
					continue
				}
				for l := range t.layouts {
					if err := t.Mem().WriteAt(t.poison[l], t.pageAt(l, pg)); err != nil {
						return nil, err
					}
				}
			}
		}
	}
	return wroteNow, nil
}

// judge compares every live page's digest in every layer with the
// shadow's, and diffs the pages that differ.
func (t *Target) judge(sh *shadow, step int, wroteNow map[int64]rowKey, buf []byte) (vs []Violation, checked, differ int, err error) {
	live := sh.livePages()
	for l := range t.layouts {
		sums, err := t.dig.digests(t, l, live, buf)
		if err != nil {
			return nil, 0, 0, err
		}
		for i, pg := range live {
			checked++
			if sums[i] == sh.pages[pg].sum[l] {
				continue
			}
			differ++
			got, err := t.page(l, pg, buf)
			if err != nil {
				return nil, 0, 0, err
			}
			v := sh.diff(step, l, pg, got, wroteNow)
			if v.Kind == Missing {
				t.locate(&v, wroteNow[v.Slot])
			}
			vs = append(vs, v)
		}
	}
	slices.SortStableFunc(vs, func(a, b Violation) int { return cmp.Or(a.Page-b.Page, a.Layer-b.Layer) })
	return vs, checked, differ, nil
}

// locate says where a missing row went, when the pool is the host's: a
// scan of the layer's pool, on the failure path alone.
func (t *Target) locate(v *Violation, k rowKey) {
	if t.direct == nil {
		return
	}
	lay := t.layouts[v.Layer]
	tok := lay.BytesPerToken()
	row := make([]byte, tok)
	rowBytes(row, t.salt, v.Layer, k)
	base := t.Pools.Regions[v.Layer].Pool.Off
	for s := 0; s < t.Geometry.PoolTokens(); s++ {
		if bytes.Equal(t.direct[base+s*tok:base+(s+1)*tok], row) {
			where := fmt.Sprintf("slot %d (page %d)", s, s/t.Geometry.PageSize)
			if s < t.Geometry.PageSize {
				where += ", the padding sink's"
			}
			v.Detail += "; " + k.String() + "'s row landed in " + where
			return
		}
	}
	v.Detail += "; " + k.String() + "'s row is nowhere in the pool"
}

// Close detaches and frees the arena.
func (t *Target) Close(ctx context.Context) {
	if t.dig != nil {
		t.dig.close()
		t.dig = nil
	}
	t.Base.Close(ctx)
}

func maxOf(xs []int) int {
	m := 0
	for _, x := range xs {
		m = max(m, x)
	}
	return m
}
