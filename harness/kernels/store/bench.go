package store

import (
	"context"
	"encoding/binary"
	"fmt"
	"math/rand/v2"

	"github.com/kvharness/kvharness/harness/arena"
	"github.com/kvharness/kvharness/harness/kind"
	"github.com/kvharness/kvharness/harness/layout"
	"github.com/kvharness/kvharness/harness/plugin"
	"github.com/kvharness/kvharness/harness/pool"
	"github.com/kvharness/kvharness/harness/protocol/kvpb"
	"github.com/kvharness/kvharness/harness/results"
	"github.com/kvharness/kvharness/harness/rundir"
	"github.com/kvharness/kvharness/harness/target"
	"github.com/kvharness/kvharness/harness/workload"
)

// Bench is how kvharness bench measures stores: per mode, cache and
// timing, a store of the unit's tokens beside a copy of its rows (the
// roofline) and an empty launch (the floor), all timed inside the plugin
// by the common Bench call (CUDA events on a GPU, the monotonic clock on
// the CPU), so that no RPC sits inside a timed loop.
var Bench = kind.Bench{
	Modes:   []results.Mode{results.Eager, results.Graph},
	Caches:  []results.Cache{results.Hot, results.Cold},
	Timings: []results.Timing{results.PerLaunch, results.Batched},
	Copy:    true, Empty: true,
	Tokens: benchTokens,
	Groups: benchGroups,
	Open: func(ctx context.Context, pl *plugin.Plugin, dir *rundir.Dir, g kind.BenchGroup, s kind.BenchSetup) (kind.BenchTarget, error) {
		return OpenArena(ctx, pl, dir, g.Layout, s)
	},
	Bytes: func(g kind.BenchGroup, id results.Identity) int64 { return BytesMoved(g.Layout, id) },
}

// benchTokens are a night's batch sizes: one decode token to a large
// prefill chunk on a GPU; on the CPU, where a store of 262,144 fp8 tokens
// takes half a second a launch, up to 4,096, so that a cell samples in
// seconds.
func benchTokens(onGPU bool, _ int) []int {
	if onGPU {
		return []int{1, 32, 512, 4096, 32768, 262144}
	}
	return []int{1, 32, 512, 4096}
}

// benchGroups are the layouts of the setup the plugin declares, each with
// an arena that fits: one past the bound is refused before a night
// starts, rather than at its group's turn in the first pass.
func benchGroups(d *plugin.Description, s kind.BenchSetup) ([]kind.BenchGroup, error) {
	if err := checkRotates(d, s); err != nil {
		return nil, err
	}
	gs, err := kind.LayoutGroups(d, s)
	if err != nil {
		return nil, err
	}
	for _, g := range gs {
		if _, _, _, err := planArena(g.Layout, s); err != nil {
			return nil, err
		}
	}
	return gs, nil
}

// checkRotates refuses a rotating setup for a plugin that does not
// declare bench_rotation: it would time its first data set alone under a
// rotate=N label.
func checkRotates(desc *plugin.Description, s kind.BenchSetup) error {
	if s.Rotations() == 1 || desc.BenchRotation {
		return nil
	}
	return fmt.Errorf("plugin %s does not declare bench_rotation: it would time one data set under a rotate=%d label; bench it with --rotate 1 (or drop it from this run's plugins), or serve it with an SDK that rotates (the Go SDK does)",
		desc.Name, s.Rotations())
}

// BytesMoved counts what one launch of a cell reads and writes: a store
// reads its rows and slots and writes its tokens; a copy reads and writes
// the rows' bytes; an empty kernel moves nothing.
func BytesMoved(l *layout.Layout, id results.Identity) int64 {
	switch id.Kernel {
	case results.KernelCopy:
		return 2 * int64(id.Tokens*l.RowBytes())
	case results.KernelEmpty:
		return 0
	}
	return int64(id.Tokens * (l.RowBytes() + 8 + l.BytesPerToken()))
}

// Arena is one pool and staging for the largest batch of a matrix, with
// rows and a slot list already staged (for a rotation, a pool, rows and
// slots per data set, as a model has per layer): every cell of a plugin
// and layout reads a prefix of them.
type Arena struct {
	p       *plugin.Plugin
	variant string
	mem     arena.Memory
	geo     pool.Geometry
	layout  *layout.Layout
	sets    []staged
}

// staged is one data set: its pool, and where its rows and slots lie.
type staged struct{ pool, rowsOff, locOff int }

// OpenArena plans, fills and stages an arena and attaches p to it. The
// slots are distinct and drawn at random from the whole pool, as a serving
// engine's free list hands them out after a while, or in whole pages
// (Matrix.SlotRun).
func OpenArena(ctx context.Context, p *plugin.Plugin, dir *rundir.Dir, l *layout.Layout, m kind.BenchSetup) (*Arena, error) {
	b := m.Backend
	if b == nil {
		return nil, arena.ErrNoBackend
	}
	opts := arena.Options{FDArenas: p.MapsFDArenas()}
	a, err := stageInterruptibly(ctx, func() (*Arena, error) {
		return stageArena(func(size int) (arena.Memory, error) { return b.New(dir, size, opts) }, l, m)
	})
	if err != nil {
		return nil, err
	}
	a.p = p
	a.variant = m.Variant
	if _, err := p.Attach(ctx, a, target.Request(arena.One(b.Place().Space, a.mem), a.geo, m.Variant)); err != nil {
		a.mem.Close()
		return nil, err
	}
	return a, nil
}

// stageInterruptibly runs stage, which cannot be stopped midway (filling
// a pool of a million slots is one memory fill of seconds on a busy
// CPU), and returns early when ctx ends: an interrupted night must stop
// within a second or two, not when its arena is ready. The staging then
// finishes on its own and frees what it made.
func stageInterruptibly(ctx context.Context, stage func() (*Arena, error)) (*Arena, error) {
	type staged struct {
		a   *Arena
		err error
	}
	done := make(chan staged, 1)
	go func() {
		a, err := stage()
		done <- staged{a, err}
	}()
	select {
	case s := <-done:
		return s.a, s.err
	case <-ctx.Done():
		go func() {
			if s := <-done; s.err == nil {
				s.a.mem.Close()
			}
		}()
		return nil, context.Cause(ctx)
	}
}

// planArena lays out the arena of a layout's cells: a pool per data set,
// and staging for each set's rows and slots.
func planArena(l *layout.Layout, m kind.BenchSetup) (g pool.Geometry, rowsBytes, locBytes int, err error) {
	n := m.MaxTokens()
	rowsBytes, locBytes = alignUp(n*l.RowBytes()), alignUp(8*n)
	sets := m.Rotations()
	specs := []pool.Spec{{Name: "bench", Layout: l, Slots: m.Slots}}
	for k := 1; k < sets; k++ {
		specs = append(specs, pool.Spec{Name: fmt.Sprintf("bench%d", k), Layout: l, Slots: m.Slots})
	}
	g, err = pool.Plan(specs, sets*(rowsBytes+locBytes))
	if err != nil {
		return g, 0, 0, rotateHint(fmt.Errorf("layout %s: %w (--slots, or the matrix's slots)", l.Name, err), sets)
	}
	return g, rowsBytes, locBytes, nil
}

// stageArena plans the arena, allocates it with alloc and stages it.
func stageArena(alloc func(size int) (arena.Memory, error), l *layout.Layout, m kind.BenchSetup) (*Arena, error) {
	n, sets := m.MaxTokens(), m.Rotations()
	g, rowsBytes, locBytes, err := planArena(l, m)
	if err != nil {
		return nil, err
	}
	mem, err := alloc(g.Size)
	if err != nil {
		return nil, rotateHint(fmt.Errorf("arena of %d MiB: %w", g.Size>>20, err), sets)
	}
	a := &Arena{mem: mem, geo: g, layout: l}
	for k := range sets {
		off := g.Staging.Off + k*(rowsBytes+locBytes)
		a.sets = append(a.sets, staged{pool: k, rowsOff: off, locOff: off + rowsBytes})
	}
	if err := a.stage(l, m, n); err != nil {
		mem.Close()
		return nil, err
	}
	return a, nil
}

// rotateHint names a rotation as the cause of an arena too large: it holds
// a pool and staged data per set.
func rotateHint(err error, sets int) error {
	if sets == 1 {
		return err
	}
	return fmt.Errorf("%w (the arena holds a pool, rows and slots for each of the %d sets of --rotate %d; lower --rotate or slots)", err, sets, sets)
}

// drawSlots draws n distinct slots of a pool of slots: runs of run
// consecutive slots, each starting at a multiple of run (whole pages, as a
// paged allocator hands them out), the runs in a random order; with run 1,
// every slot drawn alone. A cell of fewer tokens stores into a prefix of
// the draw: its first runs.
func drawSlots(rng *rand.Rand, slots, run, n int) []int {
	pages := rng.Perm(slots / run)
	out := make([]int, 0, n)
	for _, p := range pages {
		for j := 0; j < run && len(out) < n; j++ {
			out = append(out, p*run+j)
		}
		if len(out) == n {
			break
		}
	}
	return out
}

func alignUp(n int) int { return (n + pool.Alignment - 1) / pool.Alignment * pool.Alignment }

// stage fills each data set's pool and writes its n rows and n distinct
// slots of that pool.
func (a *Arena) stage(l *layout.Layout, m kind.BenchSetup, n int) error {
	rows := make([]byte, n*l.RowBytes())
	row := make([]uint16, l.HeadDim)
	loc := make([]byte, 8*n)
	for k, set := range a.sets {
		if err := a.mem.Fill(a.geo.Regions[set.pool].Span(), uint64(m.Seed)); err != nil {
			return err
		}
		slots := drawSlots(rand.New(rand.NewPCG(uint64(m.Seed), uint64(7+k))), m.Slots, max(m.SlotRun, 1), n)
		for i := range n {
			workload.Row{Kind: workload.RowNormal, Seed: uint64(k*n + i)}.Fill(row)
			for j, e := range row {
				binary.LittleEndian.PutUint16(rows[i*l.RowBytes()+2*j:], e)
			}
			binary.LittleEndian.PutUint64(loc[8*i:], uint64(slots[i]))
		}
		if err := a.mem.WriteAt(rows, set.rowsOff); err != nil {
			return err
		}
		if err := a.mem.WriteAt(loc, set.locOff); err != nil {
			return err
		}
	}
	return nil
}

// Close detaches the plugin and frees the arena.
func (a *Arena) Close(ctx context.Context) {
	if a.p.AttachedTo(a) {
		a.p.Detach(ctx)
	}
	a.mem.Close()
}

// Request is the Bench request that measures a cell on this arena: the
// store of the first data set, with the others as its rotation.
func (a *Arena) Request(id results.Identity) *kvpb.BenchRequest {
	var stores []*kvpb.StoreRequest
	for _, set := range a.sets {
		stores = append(stores, &kvpb.StoreRequest{Pool: uint32(set.pool), Capacity: uint32(id.Tokens), Valid: uint32(id.Tokens),
			Padding: kvpb.Padding_PADDING_NONE, RowsOffset: uint64(set.rowsOff), LocOffset: uint64(set.locOff),
			Graph: id.Mode == results.Graph})
	}
	return &kvpb.BenchRequest{Store: stores[0], Rotation: stores[1:],
		Cold: id.Cache == results.Cold, Copy: id.Kernel == results.KernelCopy,
		CopyBytes: uint64(id.Tokens * a.layout.RowBytes()), Empty: id.Kernel == results.KernelEmpty}
}

// Time implements kind.BenchTarget: one Bench call, timed inside the
// plugin.
func (a *Arena) Time(ctx context.Context, id results.Identity, c kind.Chunk) (kind.Timed, error) {
	req := a.Request(id)
	req.Warmup, req.Iterations, req.Batch = uint32(c.Warmup), uint32(c.Iterations), uint32(max(c.Batch, 1))
	req.Mode = kvpb.BenchMode_BENCH_PER_LAUNCH
	if c.Batched {
		req.Mode = kvpb.BenchMode_BENCH_BATCHED
	}
	resp, err := a.p.Bench(ctx, req)
	if err != nil {
		return kind.Timed{}, err
	}
	return kind.Timed{Ns: resp.Ns, Device: resp.Device, HostPaced: int(resp.HostPaced)}, nil
}
