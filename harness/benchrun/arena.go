package benchrun

import (
	"context"
	"encoding/binary"
	"fmt"
	"math/rand/v2"

	"github.com/kvharness/kvharness/harness/check"
	"github.com/kvharness/kvharness/harness/layout"
	"github.com/kvharness/kvharness/harness/plugin"
	"github.com/kvharness/kvharness/harness/pool"
	"github.com/kvharness/kvharness/harness/protocol/kvpb"
	"github.com/kvharness/kvharness/harness/results"
	"github.com/kvharness/kvharness/harness/workload"
)

// Arena is one pool and staging for the largest batch of a matrix, with
// rows and a slot list already staged: every cell of a plugin and layout
// reads a prefix of them.
type Arena struct {
	p       *plugin.Plugin
	mem     pool.Memory
	geo     pool.Geometry
	layout  *layout.Layout
	rowsOff int
	locOff  int
}

// OpenArena plans, fills and stages an arena and attaches p to it. The
// slots are distinct and drawn at random from the whole pool, as a serving
// engine's free list hands them out after a while.
func OpenArena(ctx context.Context, p *plugin.Plugin, dir *pool.Dir, b check.Backend, l *layout.Layout, m Matrix) (*Arena, error) {
	n := m.maxTokens()
	rowsBytes := (n*l.RowBytes() + pool.Alignment - 1) / pool.Alignment * pool.Alignment
	g, err := pool.Plan([]pool.Spec{{Name: "bench", Layout: l, Slots: m.Slots}}, rowsBytes+8*n)
	if err != nil {
		return nil, err
	}
	mem, err := b.NewMemory(dir, g.Size, p)
	if err != nil {
		return nil, fmt.Errorf("arena of %d MiB: %w", g.Size>>20, err)
	}
	a := &Arena{p: p, mem: mem, geo: g, layout: l, rowsOff: g.Staging.Off, locOff: g.Staging.Off + rowsBytes}
	if err := a.stage(l, m, n); err != nil {
		mem.Close()
		return nil, err
	}
	if _, err := p.Attach(ctx, a, check.AttachRequest(mem, g, m.Variant)); err != nil {
		mem.Close()
		return nil, err
	}
	return a, nil
}

func (a *Arena) stage(l *layout.Layout, m Matrix, n int) error {
	if err := a.mem.Fill(a.geo.Regions[0].Span(), uint64(m.Seed)); err != nil {
		return err
	}
	rows := make([]byte, n*l.RowBytes())
	row := make([]uint16, l.HeadDim)
	for i := range n {
		workload.Row{Kind: workload.RowNormal, Seed: uint64(i)}.Fill(row)
		for j, e := range row {
			binary.LittleEndian.PutUint16(rows[i*l.RowBytes()+2*j:], e)
		}
	}
	if err := a.mem.WriteAt(rows, a.rowsOff); err != nil {
		return err
	}
	rng := rand.New(rand.NewPCG(uint64(m.Seed), 7))
	loc := make([]byte, 8*n)
	for i, s := range rng.Perm(m.Slots)[:n] {
		binary.LittleEndian.PutUint64(loc[8*i:], uint64(s))
	}
	return a.mem.WriteAt(loc, a.locOff)
}

// Close detaches the plugin and frees the arena.
func (a *Arena) Close(ctx context.Context) { check.Release(ctx, a.p, a, a.mem) }

// Request is the Bench request that measures a cell on this arena.
func (a *Arena) Request(id results.Identity) *kvpb.BenchRequest {
	store := &kvpb.StoreRequest{Capacity: uint32(id.Tokens), Valid: uint32(id.Tokens), Padding: kvpb.Padding_PADDING_NONE,
		RowsOffset: uint64(a.rowsOff), LocOffset: uint64(a.locOff), Graph: id.Mode == results.Graph}
	return &kvpb.BenchRequest{Kernel: &kvpb.BenchRequest_Store{Store: store}, Cold: id.Cache == results.Cold,
		Copy: id.Kernel == KernelCopy, CopyBytes: uint64(id.Tokens * a.layout.RowBytes()), Empty: id.Kernel == KernelEmpty}
}
