package transfer

import (
	"context"
	"fmt"

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

// Config says what a transfer target attaches.
type Config struct {
	Variant  string
	Geometry pd.Geometry   // the buffers, pools and page size
	Seed     int64         // background seed
	Backend  arena.Backend // where the pools live: the run's (arena.Want.Choose)
}

// Target is a plugin attached to a transfer arena: for every buffer
// of the geometry a prefill (source) pool and a decode (destination) pool,
// each between guards, then a small staging window nothing may write.
// Every region is filled with a background of its own seed, so that no
// page of one pool equals a page of another by construction. Its Base's
// Pools hold the source pools, then the destination pools, in buffer
// order.
type Target struct {
	Config
	target.Base
	Buffers []pd.BufferPools // what the oracle knows of each buffer
	// GeometryViolations holds a violation per buffer whose layout the
	// plugin declares with other bytes per token or page: the item_len it
	// will use is wrong before any case runs.
	GeometryViolations []Violation
	// lazy is the memory when the pools are filled lazily (a far
	// geometry, pd.Geometry.Sparse): each case's pages are materialized
	// before its call (reach.go).
	lazy arena.Lazy
}

// Open describes the plugin, checks its geometry, plans and fills
// the arena and attaches the plugin to it.
func Open(ctx context.Context, p *plugin.Plugin, dir *rundir.Dir, cfg Config) (*Target, error) {
	if cfg.Backend == nil {
		return nil, arena.ErrNoBackend
	}
	if err := cfg.Geometry.Validate(); err != nil {
		return nil, fmt.Errorf("transfer geometry: %w", err)
	}
	if cfg.Geometry.Sparse() && cfg.Backend.Place().OnDevice() {
		// A GPU's pd arenas are backed whole: far pools live in host
		// shared memory, sparse, where the engine's descriptors (built
		// on the host either way) are checked all the same.
		cfg.Backend = arena.SHM{}
	}
	t := &Target{Config: cfg, Base: target.Base{Plugin: p, Variant: cfg.Variant}}
	layouts, err := t.layouts()
	if err != nil {
		return nil, err
	}
	if err := t.describe(ctx); err != nil {
		return nil, err
	}
	if err := t.PlanAndAttach(ctx, func() error { return t.plan(dir, layouts) }); err != nil {
		return nil, err
	}
	return t, nil
}

func (t *Target) layouts() ([]*layout.Layout, error) {
	out := make([]*layout.Layout, len(t.Geometry.Buffers))
	for i := range out {
		l, err := t.Geometry.Layout(i)
		if err != nil {
			return nil, err
		}
		out[i] = l
	}
	return out, nil
}

// describe requires the transfer kernel and every buffer's layout, and
// records a geometry violation per buffer the plugin's page size is wrong
// for.
func (t *Target) describe(ctx context.Context) error {
	problems, err := pd.CheckDeclared(ctx, t.Plugin, Name, t.Config.Variant, t.Geometry)
	for _, p := range problems {
		tv := NewViolation(oracle.Geometry)
		tv.Buffer, tv.Detail = p.Buffer, p.Detail
		t.GeometryViolations = append(t.GeometryViolations, tv)
	}
	return err
}

// regionSeed gives region i of a transfer arena (the staging window is the
// last) a background seed of its own.
func regionSeed(seed int64, i int) uint64 {
	return pool.BackgroundWord(uint64(seed), uint64(i)+0x7472616e73666572)
}

func (t *Target) plan(dir *rundir.Dir, layouts []*layout.Layout) error {
	g := t.Geometry
	var specs []pool.Spec
	for _, side := range []string{pd.SideSrc, pd.SideDst} {
		for i, b := range g.Buffers {
			specs = append(specs, b.Pool(side, layouts[i], g.Pages*g.PageSize))
		}
	}
	plan, err := pool.Plan(specs, pool.Alignment)
	if err != nil {
		return err
	}
	sparse := g.Sparse()
	if sparse {
		t.Resident = plan.Staging.Len + residentRoom
	}
	if err := t.Plan(dir, t.Backend, plan, func(mem arena.Memory) error {
		if lazy, ok := mem.(arena.Lazy); ok && lazy.Sparse() && sparse {
			t.lazy = lazy
			return fillLazily(lazy, mem, plan, t.Seed)
		}
		return fillTransfer(mem, plan, t.Seed)
	}); err != nil {
		return err
	}
	n := len(g.Buffers)
	for i, b := range g.Buffers {
		t.Buffers = append(t.Buffers, pd.BufferPools{Name: b.Name, Layout: b.Layout, Alloc: b.AllocKey(),
			PageBytes: layouts[i].PageBytes(), Pages: g.Pages, Shift: b.Shift,
			Src: plan.Regions[i], Dst: plan.Regions[n+i], SrcSeed: regionSeed(t.Seed, i), DstSeed: regionSeed(t.Seed, n+i)})
	}
	return nil
}

func fillTransfer(mem arena.Memory, plan pool.Geometry, seed int64) error {
	for i, r := range plan.Regions {
		if err := mem.Fill(r.Span(), regionSeed(seed, i)); err != nil {
			return err
		}
	}
	return mem.Fill(plan.Staging, regionSeed(seed, len(plan.Regions)))
}

// Request is the transfer request of a case: buffer i pairs source pool i
// with destination pool n+i.
func (t *Target) Request(c *Case) *kvpb.TransferRequest {
	n := len(t.Buffers)
	req := &kvpb.TransferRequest{}
	for i := range n {
		req.Buffers = append(req.Buffers, &kvpb.BufferPair{SrcPool: uint32(i), DstPool: uint32(n + i)})
	}
	for _, r := range c.Rooms {
		room := &kvpb.Room{Id: r.ID}
		for j := range r.Src {
			room.SrcPages = append(room.SrcPages, uint64(r.Src[j]))
			room.DstPages = append(room.DstPages, uint64(r.Dst[j]))
		}
		req.Rooms = append(req.Rooms, room)
	}
	return req
}
