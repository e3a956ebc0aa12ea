package pdasync

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"time"

	"github.com/kvharness/kvharness/harness/arena"
	"github.com/kvharness/kvharness/harness/layout"
	"github.com/kvharness/kvharness/harness/oracle"
	"github.com/kvharness/kvharness/harness/pd"
	"github.com/kvharness/kvharness/harness/plugin"
	"github.com/kvharness/kvharness/harness/pool"
	"github.com/kvharness/kvharness/harness/protocol/kvpb"
	"github.com/kvharness/kvharness/harness/rundir"
	"github.com/kvharness/kvharness/harness/target"
)

// DefaultWait is how long a released handle may take to end: far past any
// copy of a case's pages, short enough that a hung engine fails the case
// quickly.
const DefaultWait = 5 * time.Second

// Config says what a target attaches.
type Config struct {
	Variant  string
	Geometry pd.Geometry
	Seed     int64 // background seed
	// PrefillBackend and DecodeBackend are where the two arenas live: the
	// run's backend (arena.Want.Choose) for the prefill; a nil DecodeBackend
	// takes the prefill's. On a GPU machine
	// each is one GPU's memory; two GPUs make every copy a peer copy.
	PrefillBackend, DecodeBackend arena.Backend
	Wait                          time.Duration // see DefaultWait
}

// Target is a pair of plugin processes attached to a pair of arenas: the
// prefill process to the prefill arena (a source pool per buffer, and the
// gate window as its staging) and to the decode arena, the decode process
// to the decode arena (a destination pool per buffer). Every pool is
// filled with a background of its own seed, so that no page of one pool
// equals a page of another by construction.
type Target struct {
	Config
	Prefill, Decode *plugin.Plugin
	// Buffers is what the oracle knows of each buffer: Src offsets in the
	// prefill arena, Dst offsets in the decode arena.
	Buffers []pd.BufferPools
	// GeometryViolations holds a violation per buffer whose layout the
	// plugin declares with other bytes per page: the item_len it will use
	// is wrong before any case runs.
	GeometryViolations []Violation

	pa, da       *arena.Arena
	pPlan, dPlan pool.Geometry
	attached     bool
	// owner, shared by the targets of one pair of processes, is the target
	// they are attached to now: a process holds one attachment, so a target
	// attaches again when another attached since. Nil: this target alone.
	owner   **Target
	clean   bool     // the last run put both arenas back as it found them
	scratch [][]byte // a buffer's decode pages, read (device memory)
	// lazyPrefill and lazyDecode are the arenas' memory when their pools
	// are filled lazily (a far geometry, pd.Geometry.Sparse): each case's
	// pages are materialized before it runs (reach.go).
	lazyPrefill, lazyDecode arena.Lazy
}

// Open describes the plugin, checks its geometry, plans and fills both
// arenas and attaches the two processes, each in its role.
func Open(ctx context.Context, prefill, decode *plugin.Plugin, dir *rundir.Dir, cfg Config) (*Target, error) {
	return open(ctx, prefill, decode, dir, cfg, nil)
}

// open is Open for a target that shares its processes with others (owner).
func open(ctx context.Context, prefill, decode *plugin.Plugin, dir *rundir.Dir, cfg Config, owner **Target) (*Target, error) {
	if cfg.PrefillBackend == nil {
		return nil, arena.ErrNoBackend
	}
	if cfg.DecodeBackend == nil {
		cfg.DecodeBackend = cfg.PrefillBackend
	}
	if cfg.Wait == 0 {
		cfg.Wait = DefaultWait
	}
	if err := cfg.Geometry.Validate(); err != nil {
		return nil, fmt.Errorf("pdasync geometry: %w", err)
	}
	if cfg.Geometry.Sparse() && (cfg.PrefillBackend.Place().OnDevice() || cfg.DecodeBackend.Place().OnDevice()) {
		// A GPU's pd arenas are backed whole: far pools live in host
		// shared memory, sparse, where the engine's descriptors (built
		// on the host either way) are checked all the same.
		cfg.PrefillBackend, cfg.DecodeBackend = arena.SHM{}, arena.SHM{}
	}
	t := &Target{Config: cfg, Prefill: prefill, Decode: decode, owner: owner}
	problems, err := pd.CheckDeclared(ctx, prefill, Name, cfg.Variant, cfg.Geometry)
	if err != nil {
		return nil, err
	}
	for _, p := range problems {
		v := newViolation(oracle.Geometry, "setup")
		v.Buffer, v.Detail = p.Buffer, p.Detail
		t.GeometryViolations = append(t.GeometryViolations, v)
	}
	if err := t.plan(dir); err != nil {
		return nil, err
	}
	if err := t.attach(ctx); err != nil {
		t.free()
		return nil, err
	}
	return t, nil
}

// regionSeed gives pool i (prefill pools first, then decode pools) a
// background seed of its own.
func regionSeed(seed int64, i int) uint64 {
	return pool.BackgroundWord(uint64(seed), uint64(i)+0x7064617379636e63)
}

// plan allocates and fills the two arenas: the prefill's gate window is
// its staging, all gates held (zero).
func (t *Target) plan(dir *rundir.Dir) error {
	g := t.Geometry
	var src, dst []pool.Spec
	for i, b := range g.Buffers {
		l, err := g.Layout(i)
		if err != nil {
			return err
		}
		src = append(src, b.Pool(pd.SideSrc, l, g.Pages*g.PageSize))
		dst = append(dst, b.Pool(pd.SideDst, l, g.Pages*g.PageSize))
	}
	var err error
	if t.pPlan, err = pool.Plan(src, 4*MaxHandles); err != nil {
		return err
	}
	if t.dPlan, err = pool.Plan(dst, pool.Alignment); err != nil {
		return err
	}
	n, sparse := len(g.Buffers), g.Sparse()
	if t.pa, t.lazyPrefill, err = newArena(dir, t.PrefillBackend, t.pPlan, func(i int) uint64 { return regionSeed(t.Seed, i) }, sparse); err != nil {
		return err
	}
	if t.da, t.lazyDecode, err = newArena(dir, t.DecodeBackend, t.dPlan, func(i int) uint64 { return regionSeed(t.Seed, n+i) }, sparse); err != nil {
		t.pa.Close()
		return err
	}
	for i, b := range g.Buffers {
		l, _ := g.Layout(i)
		t.Buffers = append(t.Buffers, pd.BufferPools{Name: b.Name, Layout: b.Layout, Alloc: b.AllocKey(), PageBytes: l.PageBytes(),
			Pages: g.Pages, Shift: b.Shift, Src: t.pPlan.Regions[i], Dst: t.dPlan.Regions[i],
			SrcSeed: regionSeed(t.Seed, i), DstSeed: regionSeed(t.Seed, n+i)})
	}
	return nil
}

// newArena allocates an arena for plan on b, shared by IPC handle on a GPU
// (every process opens it so, the prefill in its own device's context),
// fills each pool with its seed and zeroes the staging window. A sparse
// plan's pools (a far geometry) are filled lazily where the memory can
// (host shared memory on tmpfs), which newArena then returns as lazy.
func newArena(dir *rundir.Dir, b arena.Backend, plan pool.Geometry, seed func(int) uint64, sparse bool) (*arena.Arena, arena.Lazy, error) {
	var o arena.Options
	if sparse {
		o.Resident = plan.Staging.Len + residentRoom
	}
	mem, err := b.New(dir, plan.Size, o)
	if err != nil {
		return nil, nil, err
	}
	lazy, ok := mem.(arena.Lazy)
	if !ok || !lazy.Sparse() || !sparse {
		lazy = nil
	}
	if err := fill(mem, lazy, plan, seed); err != nil {
		mem.Close()
		return nil, nil, err
	}
	return arena.One(b.Place().Space, mem), lazy, nil
}

// fill fills each pool with its seed, lazily when lazy is set, and zeroes
// the staging window.
func fill(mem arena.Memory, lazy arena.Lazy, plan pool.Geometry, seed func(int) uint64) error {
	if lazy != nil {
		if err := lazy.Reserve(plan.Staging); err != nil {
			return err
		}
	}
	for i, r := range plan.Regions {
		f := mem.Fill
		if lazy != nil {
			f = lazy.FillLazy
		}
		if err := f(r.Span(), seed(i)); err != nil {
			return err
		}
	}
	return mem.WriteAt(make([]byte, plan.Staging.Len), plan.Staging.Off)
}

// attach gives each process its role: the prefill maps its arena and the
// decode arena (region 1), the decode its own.
func (t *Target) attach(ctx context.Context) error {
	both := &arena.Arena{Regions: []arena.Region{t.pa.Regions[0], t.da.Regions[0]}}
	g := pool.Geometry{Regions: append([]pool.Region(nil), t.pPlan.Regions...), Staging: t.pPlan.Staging, Size: t.pPlan.Size}
	for _, r := range t.dPlan.Regions {
		r.Mem = 1
		g.Regions = append(g.Regions, r)
	}
	preq, dreq := target.Request(both, g, t.Variant), target.Request(t.da, t.dPlan, t.Variant)
	t.Prefill.Grant(preq) // each process receives the descriptors of its own attach alone
	t.Decode.Grant(dreq)
	_, err := asyncAttach(ctx, t.Prefill, &kvpb.AsyncAttachRequest{Role: kvpb.AsyncRole_ASYNC_ROLE_PREFILL, Attach: preq})
	if err != nil {
		return fmt.Errorf("attach the prefill process: %w", err)
	}
	_, err = asyncAttach(ctx, t.Decode, &kvpb.AsyncAttachRequest{Role: kvpb.AsyncRole_ASYNC_ROLE_DECODE, Attach: dreq})
	if err != nil {
		return fmt.Errorf("attach the decode process: %w", err)
	}
	t.attached = true
	if t.owner != nil {
		*t.owner = t
	}
	return nil
}

// Ensure attaches again after the processes were restarted, or attached
// to another target of theirs.
func (t *Target) Ensure(ctx context.Context) error {
	if t.attached && (t.owner == nil || *t.owner == t) {
		return nil
	}
	return t.attach(ctx)
}

// Detached marks the target as needing an attach: its processes restarted.
func (t *Target) Detached() { t.attached = false }

// PrefillMem and DecodeMem are the two arenas' memory.
func (t *Target) PrefillMem() arena.Memory { return t.pa.Mem() }

// DecodeMem is the decode arena's memory.
func (t *Target) DecodeMem() arena.Memory { return t.da.Mem() }

// Layouts lists the buffers' layouts.
func (t *Target) Layouts() []*layout.Layout {
	out := make([]*layout.Layout, len(t.Buffers))
	for i := range out {
		out[i], _ = t.Geometry.Layout(i)
	}
	return out
}

// setGate writes gate h.
func (t *Target) setGate(h int, v uint32) error {
	var b [4]byte
	binary.LittleEndian.PutUint32(b[:], v)
	return t.pa.Mem().WriteAt(b[:], t.pPlan.Staging.Off+4*h)
}

// Gate values (see kvharness.proto's AsyncAttachRequest).
const (
	gateHeld = 0
	gateGo   = 1
	gateFail = 2
)

// reset prepares a case: every gate opened (a failed case may have left
// some held), both engines reset (the prefill's waits for its handles),
// every gate held again, and both arenas put back to their backgrounds
// unless the last run did.
func (t *Target) reset(ctx context.Context) error {
	if err := t.openAll(); err != nil {
		return err
	}
	if err := asyncReset(ctx, t.Prefill); err != nil {
		return err
	}
	if err := asyncReset(ctx, t.Decode); err != nil {
		return err
	}
	if err := t.pa.Mem().WriteAt(make([]byte, t.pPlan.Staging.Len), t.pPlan.Staging.Off); err != nil {
		return err
	}
	if t.clean {
		t.clean = false
		return nil
	}
	return errors.Join(restore(t.pa.Mem(), t.pPlan), restore(t.da.Mem(), t.dPlan))
}

// pages returns buffer b's decode pages as they are now: the mapping
// itself for host memory (read in place), a copy for device memory.
func (t *Target) pages(b int) ([]byte, error) {
	bp := t.Buffers[b]
	if m, ok := t.da.Mem().(interface{ Bytes() []byte }); ok {
		return m.Bytes()[bp.Dst.Pool.Off : bp.Dst.Pool.Off+bp.PagesLen()], nil
	}
	if t.scratch == nil {
		t.scratch = make([][]byte, len(t.Buffers))
	}
	if t.scratch[b] == nil {
		t.scratch[b] = make([]byte, bp.PagesLen())
	}
	return t.scratch[b], t.da.Mem().ReadAt(t.scratch[b], bp.Dst.Pool.Off)
}

func (t *Target) openAll() error {
	go1 := make([]byte, t.pPlan.Staging.Len)
	for i := 0; i < len(go1); i += 4 {
		go1[i] = gateGo
	}
	return t.pa.Mem().WriteAt(go1, t.pPlan.Staging.Off)
}

// restore puts every pool of an arena back to its background.
func restore(mem arena.Memory, plan pool.Geometry) error {
	for _, r := range plan.Regions {
		ws, err := mem.Changed(r.Span())
		if err != nil {
			return err
		}
		if err := mem.Reset(ws); err != nil {
			return err
		}
	}
	return nil
}

// Close opens every gate, detaches both processes (so that they unmap the
// arenas before the harness frees them) and frees the arenas; the
// processes keep running.
func (t *Target) Close(ctx context.Context) {
	if t.pa == nil {
		return
	}
	t.openAll()
	if t.attached && (t.owner == nil || *t.owner == t) {
		asyncReset(ctx, t.Prefill)
		t.Prefill.Detach(ctx)
		t.Decode.Detach(ctx)
		if t.owner != nil {
			*t.owner = nil
		}
	}
	t.free()
}

func (t *Target) free() {
	if t.pa != nil {
		t.pa.Close()
	}
	if t.da != nil {
		t.da.Close()
	}
	t.pa, t.da = nil, nil
}
