package benchrun

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"

	"github.com/kvharness/kvharness/harness/kind"
	"github.com/kvharness/kvharness/harness/plugin"
	"github.com/kvharness/kvharness/harness/results"
	"github.com/kvharness/kvharness/harness/shard"
)

// A Unit is what a shard owns: one plugin's group (a layout, or the
// geometry a kind brings) at one token count, with every cell of it — the
// kind's own of each mode, cache and timing and their same-size copies. A
// group's empty launches, the floor of its smallest cells, go with its
// first unit. A unit is never split, so a kernel and the copy it is
// judged against are always measured by the same machine.
type Unit struct {
	Plugin string // as the plugin describes itself
	Layout string
	Tokens int
}

// Key is the unit's shard key: plugin/layout/tokens.
func (u Unit) Key() string { return fmt.Sprintf("%s/%s/%d", u.Plugin, u.Layout, u.Tokens) }

// described is a plugin of the matrix as its Describe answered, and the
// groups the kind measures it in.
type described struct {
	name   string // as the matrix names it (a path or bundled name)
	desc   *plugin.Description
	groups []kind.BenchGroup
}

// A groupPlan is one plugin and group: one arena serves its cells.
type groupPlan struct {
	plugin described
	group  kind.BenchGroup
	units  []Unit
	cells  []results.Identity // in matrix order
}

// A Plan is every cell a matrix makes for its plugins, grouped by plugin
// and layout, and the units a shard of it owns.
type Plan struct {
	groups []*groupPlan
	all    []Unit // every unit of the matrix, in matrix order
}

// plan lays out the cells the kind b makes of m for plugins (in the
// matrix's order) and keeps those of the units spec owns.
func plan(m Matrix, b *kind.Bench, plugins []described, onGPU bool, spec shard.Spec) (*Plan, error) {
	p := &Plan{}
	var groups []*groupPlan
	for _, d := range plugins {
		for _, gr := range d.groups {
			g := &groupPlan{plugin: d, group: gr}
			for _, t := range m.Tokens {
				u := Unit{d.desc.Name, gr.Name, t}
				g.units = append(g.units, u)
				p.all = append(p.all, u)
			}
			groups = append(groups, g)
		}
	}
	owned, err := shard.Select(spec, p.all, Unit.Key)
	if err != nil {
		return nil, err
	}
	mine := map[Unit]bool{}
	for _, u := range owned {
		mine[u] = true
	}
	for _, g := range groups {
		if g.own(m, b, onGPU, mine) {
			p.groups = append(p.groups, g)
		}
	}
	if len(p.all) > 0 && len(p.Cells()) == 0 && len(owned) > 0 {
		return nil, fmt.Errorf("the matrix's modes %v, caches %v and timings %v make no %s cell: %s kernels are timed %s",
			m.Modes, m.Caches, m.Timings, m.Kernel, m.Kernel, canTime(b))
	}
	return p, nil
}

// canTime says what a kind times, for a matrix that asks for none of it.
func canTime(b *kind.Bench) string {
	return fmt.Sprintf("in modes %v, caches %v and timings %v", b.Modes, b.Caches, b.Timings)
}

// own keeps the units of g that are mine, and their cells; it reports
// whether any is left.
func (g *groupPlan) own(m Matrix, b *kind.Bench, onGPU bool, mine map[Unit]bool) bool {
	first := g.units[0]
	var units []Unit
	for _, u := range g.units {
		if mine[u] {
			units = append(units, u)
		}
	}
	g.units = units
	seen := map[results.Key]bool{}
	for _, u := range units {
		for _, id := range g.unitCells(m, b, onGPU, u, u == first) {
			if !seen[id.Key()] {
				seen[id.Key()] = true
				g.cells = append(g.cells, id)
			}
		}
	}
	return len(units) > 0
}

// unitCells are the cells of one unit: per mode, cache and timing the
// kind can time, its own and their eager copy, and with empties the empty
// launch of each (for a kind that measures them).
func (g *groupPlan) unitCells(m Matrix, b *kind.Bench, onGPU bool, u Unit, empties bool) []results.Identity {
	var out []results.Identity
	for _, mode := range modes(m, onGPU) {
		for _, cache := range m.Caches {
			for _, timing := range m.Timings {
				if !measurable(cache, timing) || !b.Can(mode, cache, timing) {
					continue
				}
				if b.Copy && b.Can(results.Eager, cache, timing) {
					out = append(out, g.identity(m, results.KernelCopy, u.Tokens, results.Eager, cache, timing))
				}
				if empties && b.Empty {
					out = append(out, g.identity(m, results.KernelEmpty, 1, mode, cache, timing))
				}
				out = append(out, g.identity(m, string(m.Kernel), u.Tokens, mode, cache, timing))
			}
		}
	}
	return out
}

func (g *groupPlan) identity(m Matrix, kernel string, tokens int, mode results.Mode, cache results.Cache, timing results.Timing) results.Identity {
	d := g.plugin.desc
	return results.Identity{Plugin: d.Name, PluginVersion: d.Version, Variant: m.Variant,
		Kernel: kernel, Layout: g.group.Name, HeadDim: g.group.HeadDim, PageSize: g.group.PageSize, Tokens: tokens,
		Mode: mode, Cache: cache, Timing: timing, BatchSize: 1, Rotate: nameField(m.Rotate),
		SlotRun: nameField(m.SlotRun)}
}

// modes drops graph mode off the GPU: a CPU kernel has no graph to replay.
func modes(m Matrix, onGPU bool) []results.Mode {
	var out []results.Mode
	for _, md := range m.Modes {
		if md != results.Graph || onGPU {
			out = append(out, md)
		}
	}
	return out
}

// Cells are every cell the plan measures, in plan order.
func (p *Plan) Cells() []results.Identity {
	var out []results.Identity
	for _, g := range p.groups {
		out = append(out, g.cells...)
	}
	return out
}

// Units are the units the plan's shard owns, in matrix order.
func (p *Plan) Units() []Unit {
	var out []Unit
	for _, g := range p.groups {
		out = append(out, g.units...)
	}
	return out
}

// Digest identifies the whole matrix's units (every shard's): shards of
// one night agree on it, and merge refuses shards that do not.
func (p *Plan) Digest() string {
	keys := make([]string, len(p.all))
	for i, u := range p.all {
		keys[i] = u.Key()
	}
	sum := sha256.Sum256([]byte(strings.Join(keys, "\n")))
	return hex.EncodeToString(sum[:8])
}

// order is the order of a group's cells in one pass: shuffled by the
// matrix seed, the pass and the group, so that no cell always follows the
// same other cell, and the same for every machine that runs the pass.
func order(cells []results.Identity, seed int64, pass, group int) []results.Identity {
	out := slices.Clone(cells)
	rng := rand.New(rand.NewPCG(uint64(seed), uint64(pass)<<32|uint64(group)))
	rng.Shuffle(len(out), func(i, j int) { out[i], out[j] = out[j], out[i] })
	return out
}
