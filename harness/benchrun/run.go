package benchrun

import (
	"context"
	"fmt"
	"io"
	"slices"
	"sort"
	"time"

	"github.com/kvharness/kvharness/harness/arena"
	"github.com/kvharness/kvharness/harness/layout"
	"github.com/kvharness/kvharness/harness/measure"
	"github.com/kvharness/kvharness/harness/plugin"
	"github.com/kvharness/kvharness/harness/protocol/kvpb"
	"github.com/kvharness/kvharness/harness/results"
	"github.com/kvharness/kvharness/harness/rundir"
)

// Kernels of the cells a run records besides the store itself.
const (
	KernelStore = "store"
	KernelCopy  = "copy"  // a device (or memory) copy of the same input bytes: the roofline
	KernelEmpty = "empty" // an empty kernel launch: the floor for tiny batches
)

// Runner runs a matrix against plugins.
type Runner struct {
	Matrix   Matrix
	Dir      *rundir.Dir
	Backend  arena.Backend
	OnGPU    bool // graph mode needs it; graph cells are skipped on the CPU
	Log      *results.LogWriter
	Previous []results.Cell // cells of an earlier, resumed run
	Env      results.Env
	PeakGBps float64
	Progress io.Writer // nil: quiet
	Start    func(ctx context.Context, name string) (*plugin.Plugin, error)

	done    map[results.Key]results.Cell
	wanted  map[results.Key]bool // every cell this run's matrix produces
	visited map[string]bool      // plugins (by described name) this run reached
	total   int
	count   int
}

// Run measures every cell not already done and returns the new ones.
func (r *Runner) Run(ctx context.Context) ([]results.Cell, error) {
	r.done, r.wanted, r.visited = map[results.Key]results.Cell{}, map[results.Key]bool{}, map[string]bool{}
	for _, c := range r.Previous {
		r.done[c.Key()] = c
	}
	var out []results.Cell
	for _, name := range r.Matrix.Plugins {
		cells, err := r.runPlugin(ctx, name)
		out = append(out, cells...)
		if err != nil {
			return out, err
		}
	}
	r.progressDone()
	return out, nil
}

func (r *Runner) runPlugin(ctx context.Context, name string) ([]results.Cell, error) {
	p, err := r.Start(ctx, name)
	if err != nil {
		return nil, err
	}
	defer p.Close()
	m := r.Matrix
	desc, err := p.Describe(ctx, &kvpb.DescribeRequest{Variant: m.Variant, HeadDim: uint32(m.HeadDim), PageSize: uint32(m.PageSize)})
	if err != nil {
		return nil, err
	}
	r.visited[desc.Name] = true
	if !slices.Contains(desc.Kernels, KernelStore) {
		return nil, fmt.Errorf("plugin %s has no store kernel (it serves %v): kvharness bench measures stores; drop it from the matrix's plugins", name, desc.Kernels)
	}
	if err := checkRotates(desc, m); err != nil {
		return nil, err
	}
	layouts, err := pickLayouts(desc, m)
	if err != nil {
		return nil, err
	}
	r.total += len(layouts) * len(m.Tokens) * len(r.modes()) * m.cacheTimings()
	var out []results.Cell
	for _, l := range layouts {
		g := &group{r: r, p: p, desc: desc, l: l}
		cells, err := g.run(ctx)
		out = append(out, cells...)
		if err != nil {
			return out, fmt.Errorf("%s %s: %w", name, l.Name, err)
		}
	}
	return out, nil
}

// checkRotates refuses a rotating matrix for a plugin that does not
// declare bench_rotation: it would time its first data set alone under a
// rotate=N label.
func checkRotates(desc *kvpb.DescribeResponse, m Matrix) error {
	if m.rotations() == 1 || desc.BenchRotation {
		return nil
	}
	return fmt.Errorf("plugin %s does not declare bench_rotation: it would time one data set under a rotate=%d label; bench it with --rotate 1 (or drop it from this run's plugins), or serve it with an SDK that rotates (the Go SDK does)",
		desc.Name, m.rotations())
}

// modes drops graph mode off the GPU: a CPU kernel has no graph to replay.
func (r *Runner) modes() []results.Mode {
	var out []results.Mode
	for _, m := range r.Matrix.Modes {
		if m != results.Graph || r.OnGPU {
			out = append(out, m)
		}
	}
	return out
}

// pickLayouts keeps the matrix's layouts that the plugin declares: a
// matrix lists layouts for all its plugins, and bf16scatter has no fp8.
func pickLayouts(desc *kvpb.DescribeResponse, m Matrix) ([]*layout.Layout, error) {
	declared := map[string]bool{}
	for _, g := range desc.Layouts {
		declared[g.Layout] = true
	}
	var names []string
	for _, n := range m.Layouts {
		if n != "all" {
			if declared[n] {
				names = append(names, n)
			}
			continue
		}
		for _, g := range desc.Layouts {
			if layout.Describe(g.Layout) != "" {
				names = append(names, g.Layout)
			}
		}
	}
	if len(names) == 0 {
		return nil, fmt.Errorf("plugin %s declares none of the layouts %v (it has %v)", desc.Name, m.Layouts, keys(declared))
	}
	var out []*layout.Layout
	for _, n := range names {
		l, err := layout.Builtin(n, m.HeadDim, m.PageSize)
		if err != nil {
			return nil, err
		}
		out = append(out, l)
	}
	return out, nil
}

// group is one plugin and one layout: one arena serves all its cells.
type group struct {
	r    *Runner
	p    *plugin.Plugin
	desc *kvpb.DescribeResponse
	l    *layout.Layout
	a    *Arena
}

func (g *group) run(ctx context.Context) ([]results.Cell, error) {
	a, err := OpenArena(ctx, g.p, g.r.Dir, g.r.Backend, g.l, g.r.Matrix)
	if err != nil {
		return nil, err
	}
	defer a.Close(ctx)
	g.a = a
	if err := g.warm(ctx); err != nil {
		return nil, err
	}
	var out []results.Cell
	m := g.r.Matrix
	for _, tokens := range m.Tokens {
		for _, mode := range g.r.modes() {
			for _, cache := range m.Caches {
				for _, timing := range m.Timings {
					if !measurable(cache, timing) {
						continue
					}
					cells, err := g.cell(ctx, tokens, mode, cache, timing)
					out = append(out, cells...)
					if err != nil {
						return out, err
					}
				}
			}
		}
	}
	return out, nil
}

// warmTime is how long a group runs its largest store before measuring:
// the first cells of a run otherwise pay for cold caches, lazy page
// mapping and clock ramp-up, and a night's first rows would differ from
// the baseline's for no reason of the kernel's.
const warmTime = 300 * time.Millisecond

func (g *group) warm(ctx context.Context) error {
	id := g.identity(KernelStore, g.r.Matrix.maxTokens(), results.Eager, results.Hot, results.PerLaunch)
	req := g.a.Request(id)
	req.Warmup, req.Iterations = 1, 1
	resp, err := g.p.Bench(ctx, req)
	if err != nil {
		return err
	}
	req.Warmup = uint32(clamp(int(float64(warmTime)/max(resp.Ns[0], 1)), 1, 100000))
	_, err = g.p.Bench(ctx, req)
	return err
}

// cell measures one store cell, and the copy and empty references it is
// compared with unless an earlier cell of this run already measured them.
func (g *group) cell(ctx context.Context, tokens int, mode results.Mode, cache results.Cache, timing results.Timing) ([]results.Cell, error) {
	g.r.progress(g.desc.Name, g.l.Name, tokens, mode, cache, timing)
	var out []results.Cell
	copyCell, fresh, err := g.measure(ctx, g.identity(KernelCopy, tokens, results.Eager, cache, timing), nil)
	if err != nil {
		return nil, err
	}
	if fresh {
		out = append(out, copyCell)
	}
	empty, fresh, err := g.measure(ctx, g.identity(KernelEmpty, 1, mode, cache, timing), nil)
	if err != nil {
		return out, err
	}
	if fresh {
		out = append(out, empty)
	}
	store, fresh, err := g.measure(ctx, g.identity(KernelStore, tokens, mode, cache, timing), &copyCell)
	if err != nil {
		return out, err
	}
	if fresh {
		out = append(out, store)
	}
	return out, nil
}

func (g *group) identity(kernel string, tokens int, mode results.Mode, cache results.Cache, timing results.Timing) results.Identity {
	return results.Identity{Plugin: g.desc.Name, PluginVersion: g.desc.Version, Variant: g.r.Matrix.Variant,
		Kernel: kernel, Layout: g.l.Name, HeadDim: g.l.HeadDim, PageSize: g.l.PageSize, Tokens: tokens,
		Mode: mode, Cache: cache, Timing: timing, BatchSize: 1, Rotate: nameField(g.r.Matrix.Rotate),
		SlotRun: nameField(g.r.Matrix.SlotRun)}
}

// measure returns the cell of id, from this or a resumed run when it was
// done already (fresh is false then), otherwise by sampling and logging it.
func (g *group) measure(ctx context.Context, id results.Identity, copyCell *results.Cell) (results.Cell, bool, error) {
	if c, ok := g.r.lookup(id); ok {
		return c, false, nil
	}
	crit := g.r.Matrix.PerLaunch
	if id.Timing == results.Batched {
		crit = g.r.Matrix.Batched
	}
	s, err := sample(ctx, g.p, g.a.Request(id), id.Timing, crit)
	if err != nil {
		return results.Cell{}, false, err
	}
	c, err := g.record(id, s, copyCell)
	return c, err == nil, err
}

// BytesMoved counts what one launch of a cell reads and writes: a store
// reads its rows and slots and writes its tokens; a copy reads and writes
// the rows' bytes; an empty kernel moves nothing.
func BytesMoved(l *layout.Layout, id results.Identity) int64 {
	switch id.Kernel {
	case KernelCopy:
		return 2 * int64(id.Tokens*l.RowBytes())
	case KernelEmpty:
		return 0
	}
	return int64(id.Tokens * (l.RowBytes() + 8 + l.BytesPerToken()))
}

func (g *group) record(id results.Identity, s sampled, copyCell *results.Cell) (results.Cell, error) {
	sum, err := measure.Summarize(s.ns)
	if err != nil {
		return results.Cell{}, fmt.Errorf("cell %s: %w", id.Name(), err)
	}
	id.BatchSize = s.batch
	c := results.Cell{Identity: id, Summary: sum, BytesPerLaunch: BytesMoved(g.l, id), PeakGBps: g.r.PeakGBps,
		Stop: s.stop, Env: g.r.Env, HostPaced: s.hostPaced}
	if s.dev != "" {
		c.Env.Device = s.dev
	}
	c.Env.Time = time.Now().UTC()
	if copyCell != nil {
		c.CopyNs, c.CopyGBps = copyCell.Summary.P50, copyCell.GBps
	}
	if g.r.Matrix.KeepSamples {
		c.Samples = s.ns
	}
	if err := c.Derive(); err != nil && id.Kernel != KernelEmpty {
		return c, err
	}
	if err := g.r.Log.Append(c); err != nil {
		return c, fmt.Errorf("log cell %s: %w", id.Name(), err)
	}
	g.r.done[c.Key()] = c
	return c, nil
}

// lookup finds a finished cell of the same identity, and notes that the
// matrix produces it.
func (r *Runner) lookup(id results.Identity) (results.Cell, bool) {
	r.wanted[id.Key()] = true
	c, ok := r.done[id.Key()]
	return c, ok
}

// Current splits the cells of a resumed run after Run: those this run's
// matrix still produces, or that belong to a plugin the run did not reach
// (it stopped early), are kept; the rest measured another plugin version,
// variant or geometry and would mix with the new cells under one
// benchmark name.
func (r *Runner) Current(previous []results.Cell) (kept, dropped []results.Cell) {
	for _, c := range previous {
		if r.wanted[c.Key()] || !r.visited[c.Plugin] {
			kept = append(kept, c)
		} else {
			dropped = append(dropped, c)
		}
	}
	return kept, dropped
}

func (r *Runner) progress(plugin, l string, tokens int, mode results.Mode, cache results.Cache, timing results.Timing) {
	r.count++
	if r.Progress != nil {
		fmt.Fprintf(r.Progress, "\r\033[K[%d/%d] %s %s tokens=%d %s %s %s", r.count, r.total, plugin, l, tokens, mode, cache, timing)
	}
}

func (r *Runner) progressDone() {
	if r.Progress != nil {
		fmt.Fprintln(r.Progress)
	}
}

func keys(m map[string]bool) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
