package load

import (
	"context"
	"fmt"

	"github.com/kvharness/kvharness/harness/arena"
	"github.com/kvharness/kvharness/harness/layout"
	"github.com/kvharness/kvharness/harness/plugin"
	"github.com/kvharness/kvharness/harness/pool"
	"github.com/kvharness/kvharness/harness/rundir"
	"github.com/kvharness/kvharness/harness/target"
)

// Config says what a load target attaches.
type Config struct {
	Variant  string
	Geometry Geometry
	Seed     int64         // background seed
	Backend  arena.Backend // where the device pools live: the run's (arena.Want.Choose)
}

// Regions of a load arena.
const (
	regionDevice = 0 // the device pools and staging (GPU memory on the cuda backend)
	regionHost   = 1 // the host pools: host shared memory, pinned by the plugin on a GPU
)

// Target is a plugin attached to a load arena: region 0 holds a device
// pool per layer and buffer, each between guards, then staging (the
// probes', readers', inputs' and truths' slots); region 1, host shared
// memory, holds a host pool per layer and buffer. Every pool is filled
// with a background of its own seed: a device pool's is the poison a read
// before its load sees, a host pool's what the load must bring.
type Target struct {
	Config
	target.Base
	layouts []*layout.Layout
	// live are the pages a far geometry's cases name (reach.go); nil
	// when the pools are dense.
	live []int
	// sections are the staging slots' starts: probes, readers, inputs,
	// truths, each room for every layer, buffer and page.
	sections [numSections]int
	section  int
}

// residentRoom is what a far arena's pages may hold beyond its live
// pages and staging: the holes stray writes allocate.
const residentRoom = 64 << 20

// Staging sections.
const (
	secProbe = iota
	secReader
	secInput
	secTruth
	numSections
)

// Open describes the plugin, plans and fills the arena and attaches the
// plugin to it.
func Open(ctx context.Context, p *plugin.Plugin, dir *rundir.Dir, cfg Config) (*Target, error) {
	if cfg.Backend == nil {
		return nil, arena.ErrNoBackend
	}
	if err := cfg.Geometry.Validate(); err != nil {
		return nil, fmt.Errorf("load geometry: %w", err)
	}
	t := &Target{Config: cfg, Base: target.Base{Plugin: p, Variant: cfg.Variant}}
	for i := range cfg.Geometry.Buffers {
		l, err := cfg.Geometry.Layout(i)
		if err != nil {
			return nil, err
		}
		t.layouts = append(t.layouts, l)
	}
	d, err := p.Describe(ctx, plugin.Query{Variant: cfg.Variant, HeadDim: t.layouts[0].HeadDim, PageSize: cfg.Geometry.PageSize})
	if err != nil {
		return nil, err
	}
	if err := target.Serves(p.Name, d, Name); err != nil {
		return nil, err
	}
	if err := t.PlanAndAttach(ctx, func() error { return t.plan(dir) }); err != nil {
		return nil, err
	}
	return t, nil
}

// pageBytes is a page of geometry buffer b.
func (t *Target) pageBytes(b int) int { return t.layouts[b].PageBytes() }

// devicePool and hostPool are the indices of layer l's pools of geometry
// buffer b among the attach's pools.
func (t *Target) devicePool(l, b int) int { return l*len(t.layouts) + b }
func (t *Target) hostPool(l, b int) int {
	return t.Geometry.Layers*len(t.layouts) + t.devicePool(l, b)
}

// plan lays out both regions, allocates them and fills every pool.
func (t *Target) plan(dir *rundir.Dir) error {
	g := t.Geometry
	var specs []pool.Spec
	for _, side := range []string{"dev", "host"} {
		for l := range g.Layers {
			for b, buf := range g.Buffers {
				specs = append(specs, pool.Spec{Name: fmt.Sprintf("%s/L%d.%s", side, l, buf.Name), Layout: t.layouts[b], Slots: g.Pages * g.PageSize})
			}
		}
	}
	per := 0
	for b := range g.Buffers {
		per += t.pageBytes(b)
	}
	// Staging holds one case's pages, far pools or not.
	t.section = align(g.Layers * g.CasePages() * per)
	t.live = g.LivePages()
	n := g.Layers * len(g.Buffers)
	devPlan, err := pool.Plan(specs[:n], numSections*t.section)
	if err != nil {
		return err
	}
	hostPlan, err := pool.Plan(specs[n:], pool.Alignment)
	if err != nil {
		return err
	}
	for i := range t.sections {
		t.sections[i] = devPlan.Staging.Off + i*t.section
	}
	return t.allocate(dir, devPlan, hostPlan)
}

func align(n int) int { return (n + pool.Alignment - 1) / pool.Alignment * pool.Alignment }

// allocate makes region 0 on the backend and region 1 in host shared
// memory, fills them, and keeps one geometry of both (pools of region 1
// say so), which is what the attach describes. Far pools are sparse
// (reach.go): each region is backed where its live pages are.
func (t *Target) allocate(dir *rundir.Dir, devPlan, hostPlan pool.Geometry) error {
	opts := arena.Options{FDArenas: t.Plugin.MapsFDArenas(), SparseArenas: t.Plugin.MapsSparseArenas()}
	hostOpts := opts
	if t.live != nil {
		if t.Backend.Place().OnDevice() && !arena.Sparse(t.Backend, opts) {
			return fmt.Errorf("far load pools (%d pages) on a GPU need a plugin that maps sparse CUDA arenas (cuda_sparse_arenas); "+
				"%s maps none: run a check with --slots, whose edges row stays near", t.Geometry.Pages, t.Plugin.Name)
		}
		devLive, hostLive := liveIn(devPlan.Regions, 0, t.live), liveIn(hostPlan.Regions, 0, t.live)
		opts.Backed = append(devLive, devPlan.Staging)
		opts.Resident = pool.Total(devLive) + devPlan.Staging.Len + residentRoom
		hostOpts.Resident = pool.Total(hostLive) + residentRoom
	}
	dev, err := t.Backend.New(dir, devPlan.Size, opts)
	if err != nil {
		return err
	}
	host, err := arena.SHM{}.New(dir, hostPlan.Size, hostOpts)
	if err != nil {
		dev.Close()
		return err
	}
	t.Arena = &arena.Arena{Regions: []arena.Region{{Space: t.Backend.Place().Space, Mem: dev}, {Space: arena.PinnedHost, Mem: host}}}
	all := devPlan
	all.Regions = append([]pool.Region(nil), devPlan.Regions...)
	for _, r := range hostPlan.Regions {
		r.Mem = regionHost
		all.Regions = append(all.Regions, r)
	}
	t.Pools = all
	if err := t.fill(); err != nil {
		t.Arena.Close()
		return err
	}
	return nil
}

// poolSeed gives pool i (device pools first, then host pools) a
// background of its own; stagingSeed is the staging's.
func (t *Target) poolSeed(i int) uint64 {
	return pool.BackgroundWord(uint64(t.Seed), uint64(i)+0x6c6f6164)
}

func (t *Target) stagingSeed() uint64 { return t.poolSeed(len(t.Pools.Regions)) }

func (t *Target) fill() error {
	if t.live != nil {
		return t.fillFar()
	}
	for i, r := range t.Pools.Regions {
		if err := t.Arena.Regions[r.Mem].Mem.Fill(r.Span(), t.poolSeed(i)); err != nil {
			return err
		}
	}
	return t.Arena.Regions[regionDevice].Mem.Fill(t.Pools.Staging, t.stagingSeed())
}

// fillFar fills far pools: lazily where the region is a sparse file, with
// the live pages materialized now, once (a case names no others, so
// nothing is materialized or given back between cases); on a sparse
// device reservation, whose fill keeps to its backed windows, as usual.
func (t *Target) fillFar() error {
	for region := range t.Arena.Regions {
		mem := t.Arena.Regions[region].Mem
		lazy, ok := mem.(arena.Lazy)
		if !ok || !lazy.Sparse() {
			if t.Arena.Regions[region].Space != arena.Device {
				return fmt.Errorf("far load pools (%d pages) need the run directory on tmpfs, where they are sparse files: "+
					"set KVHARNESS_RUNTIME_DIR to a tmpfs folder (/dev/shm), or run a check with --slots, whose edges row stays near", t.Geometry.Pages)
			}
			continue
		}
		if region == regionDevice {
			if err := lazy.Reserve(t.Pools.Staging); err != nil {
				return err
			}
		}
		for i, r := range t.Pools.Regions {
			if r.Mem != region {
				continue
			}
			if err := lazy.FillLazy(r.Span(), t.poolSeed(i)); err != nil {
				return err
			}
		}
		if err := lazy.Materialize(liveIn(t.Pools.Regions, region, t.live)); err != nil {
			return err
		}
	}
	for i, r := range t.Pools.Regions {
		if _, lazy := t.Arena.Regions[r.Mem].Mem.(arena.Lazy); !lazy {
			if err := t.Arena.Regions[r.Mem].Mem.Fill(r.Span(), t.poolSeed(i)); err != nil {
				return err
			}
		}
	}
	return t.Arena.Regions[regionDevice].Mem.Fill(t.Pools.Staging, t.stagingSeed())
}

// Close detaches and frees the arena.
func (t *Target) Close(ctx context.Context) { t.Base.Close(ctx) }

// liveIn are the windows the live pages of the pools of regions in arena
// region mem occupy, and their guards, in the arena's order.
func liveIn(regions []pool.Region, mem int, live []int) []pool.Window {
	var out []pool.Window
	for _, r := range regions {
		if r.Mem == mem {
			out = append(out, liveWindows(r, r.Layout.PageBytes(), live)...)
		}
	}
	return out
}
