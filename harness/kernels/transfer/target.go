package transfer

import (
	"context"
	"fmt"
	"slices"

	"github.com/kvharness/kvharness/harness/arena"
	"github.com/kvharness/kvharness/harness/layout"
	"github.com/kvharness/kvharness/harness/oracle"
	"github.com/kvharness/kvharness/harness/plugin"
	"github.com/kvharness/kvharness/harness/pool"
	"github.com/kvharness/kvharness/harness/protocol/kvpb"
	"github.com/kvharness/kvharness/harness/rundir"
	"github.com/kvharness/kvharness/harness/workload"
)

// TransferConfig says what a transfer target attaches.
type TransferConfig struct {
	Variant  string
	Geometry workload.TransferGeometry
	Seed     int64   // background seed
	Backend  Backend // nil: host shared memory
}

// TransferTarget is a plugin attached to a transfer arena: for every buffer
// of the geometry a prefill (source) pool and a decode (destination) pool,
// each between guards, then a small staging window nothing may write.
// Every region is filled with a background of its own seed, so that no
// page of one pool equals a page of another by construction.
type TransferTarget struct {
	TransferConfig
	Plugin  *plugin.Plugin
	Mem     arena.Memory
	Plan    pool.Geometry           // the source pools, then the destination pools, in buffer order
	Buffers []oracle.TransferBuffer // what the oracle knows of each buffer
	// GeometryViolations holds a violation per buffer whose layout the
	// plugin declares with other bytes per token or page: the item_len it
	// will use is wrong before any case runs.
	GeometryViolations []oracle.TransferViolation
}

// OpenTransfer describes the plugin, checks its geometry, plans and fills
// the arena and attaches the plugin to it.
func OpenTransfer(ctx context.Context, p *plugin.Plugin, dir *rundir.Dir, cfg TransferConfig) (*TransferTarget, error) {
	if cfg.Backend == nil {
		cfg.Backend = SHM{}
	}
	if err := cfg.Geometry.Validate(); err != nil {
		return nil, fmt.Errorf("transfer geometry: %w", err)
	}
	t := &TransferTarget{TransferConfig: cfg, Plugin: p}
	layouts, err := t.layouts()
	if err != nil {
		return nil, err
	}
	if err := t.describe(ctx, layouts); err != nil {
		return nil, err
	}
	if err := t.plan(dir, layouts); err != nil {
		return nil, err
	}
	if err := t.attach(ctx); err != nil {
		t.Mem.Close()
		return nil, err
	}
	return t, nil
}

func (t *TransferTarget) layouts() ([]*layout.Layout, error) {
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
func (t *TransferTarget) describe(ctx context.Context, layouts []*layout.Layout) error {
	byDim := map[int]*kvpb.DescribeResponse{}
	for i, b := range t.Geometry.Buffers {
		d, ok := byDim[b.HeadDim]
		if !ok {
			var err error
			if d, err = t.describeDim(ctx, b.HeadDim); err != nil {
				return err
			}
			byDim[b.HeadDim] = d
		}
		k := slices.IndexFunc(d.Layouts, func(g *kvpb.Geometry) bool { return g.Layout == layouts[i].Name })
		if k < 0 {
			return fmt.Errorf("%w: %s does not transfer layout %s (buffer %s; it lists %v)", ErrUnsupported, t.Plugin.Name, b.Layout, b.Name, layoutNames(d))
		}
		g := d.Layouts[k]
		if v := geometryViolation(layouts[i], oracle.Declared{BytesPerToken: int(g.BytesPerToken), PageBytes: int(g.BytesPerPage)}); v != nil {
			tv := oracle.NewTransferViolation(oracle.Geometry)
			tv.Buffer, tv.Detail = b.Name, v.Detail
			t.GeometryViolations = append(t.GeometryViolations, tv)
		}
	}
	return nil
}

func (t *TransferTarget) describeDim(ctx context.Context, headDim int) (*kvpb.DescribeResponse, error) {
	d, err := t.Plugin.Describe(ctx, &kvpb.DescribeRequest{Variant: t.Variant, HeadDim: uint32(headDim), PageSize: uint32(t.Geometry.PageSize)})
	if err != nil {
		return nil, err
	}
	if !slices.Contains(d.Kernels, "transfer") {
		return nil, fmt.Errorf("%w: %s has no transfer kernel (it serves %v)", ErrUnsupported, t.Plugin.Name, d.Kernels)
	}
	return d, nil
}

// regionSeed gives region i of a transfer arena (the staging window is the
// last) a background seed of its own.
func regionSeed(seed int64, i int) uint64 {
	return pool.BackgroundWord(uint64(seed), uint64(i)+0x7472616e73666572)
}

func (t *TransferTarget) plan(dir *rundir.Dir, layouts []*layout.Layout) error {
	g := t.Geometry
	var specs []pool.Spec
	for _, side := range []string{workload.SideSrc, workload.SideDst} {
		for i, b := range g.Buffers {
			specs = append(specs, pool.Spec{Name: b.PoolName(side), Layout: layouts[i], Slots: g.Pages * g.PageSize})
		}
	}
	plan, err := pool.Plan(specs, pool.Alignment)
	if err != nil {
		return err
	}
	mem, err := t.Backend.NewMemory(dir, plan.Size, t.Plugin)
	if err != nil {
		return err
	}
	if err := fillTransfer(mem, plan, t.Seed); err != nil {
		mem.Close()
		return err
	}
	t.Plan, t.Mem = plan, mem
	n := len(g.Buffers)
	for i, b := range g.Buffers {
		t.Buffers = append(t.Buffers, oracle.TransferBuffer{Name: b.Name, Layout: b.Layout, Alloc: b.AllocKey(),
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

func (t *TransferTarget) attach(ctx context.Context) error {
	_, err := t.Plugin.Attach(ctx, t, AttachRequest(t.Mem, t.Plan, t.Variant))
	return err
}

// Close detaches the plugin and frees the arena; the plugin keeps running.
func (t *TransferTarget) Close(ctx context.Context) { Release(ctx, t.Plugin, t, t.Mem) }

// Request is the transfer request of a case: buffer i pairs source pool i
// with destination pool n+i.
func (t *TransferTarget) Request(c *workload.Transfer) *kvpb.TransferRequest {
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
