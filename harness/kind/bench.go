package kind

import (
	"context"
	"fmt"
	"slices"
	"sort"

	"github.com/kvharness/kvharness/harness/arena"
	"github.com/kvharness/kvharness/harness/layout"
	"github.com/kvharness/kvharness/harness/plugin"
	"github.com/kvharness/kvharness/harness/results"
	"github.com/kvharness/kvharness/harness/rundir"
)

// Bench is how kvharness bench measures a kind: which cells a unit (a
// plugin's group at one token count) has, and a target that times them.
// The runner (package benchrun) does the rest alike for every kind: the
// matrix and its shards, the passes, the stopping rules, the journal, the
// table, the comparison and the plots.
type Bench struct {
	// Modes, Caches and Timings are those the kind can time: a matrix's
	// others make no cell of it.
	Modes   []results.Mode
	Caches  []results.Cache
	Timings []results.Timing
	// Copy and Empty: the kind measures beside its own cells a copy of
	// the same bytes (results.KernelCopy: the roofline) and an empty
	// launch (results.KernelEmpty, at one token: the floor).
	Copy, Empty bool
	// Tokens are the batch sizes a night measures when neither --tokens
	// nor a matrix file names them, on a GPU or not, for pages of
	// pageSize tokens.
	Tokens func(onGPU bool, pageSize int) []int
	// Groups are the groups plugin d is measured in, one arena each: a
	// kind with layouts has one per layout of the matrix d declares
	// (LayoutGroups); a kind that brings its geometry has one. An error
	// names what d lacks.
	Groups func(d *plugin.Description, s BenchSetup) ([]BenchGroup, error)
	// Validate refuses a setup the kind cannot measure (tokens that are
	// not whole pages, a rotation it does not take), naming the setting;
	// nil: any.
	Validate func(s BenchSetup) error
	// Open opens the target that times group g's cells on plugin pl.
	Open func(ctx context.Context, pl *plugin.Plugin, dir *rundir.Dir, g BenchGroup, s BenchSetup) (BenchTarget, error)
	// Bytes is what one launch of cell id of group g moves: its GB/s is
	// this over its median time.
	Bytes func(g BenchGroup, id results.Identity) int64
}

// BenchSetup is what a night asks of every group's cells: the matrix's
// settings and the backend its arenas live on.
type BenchSetup struct {
	Variant           string
	HeadDim, PageSize int
	Slots             int
	Seed              int64
	Layouts           []string // layout names, or "all"
	Tokens            []int
	Rotate, SlotRun   int // 0 or 1: none
	Backend           arena.Backend
}

// MaxTokens is the largest batch of the setup.
func (s BenchSetup) MaxTokens() int {
	n := 0
	for _, t := range s.Tokens {
		n = max(n, t)
	}
	return n
}

// Rotations is how many data sets a cell's launches take in turn.
func (s BenchSetup) Rotations() int { return max(s.Rotate, 1) }

// BenchGroup is one arena's cells: a layout of the plugin's, or the
// geometry a kind brings. Its Name, HeadDim and PageSize name the cells.
type BenchGroup struct {
	Name              string         // the cells' layout: the layout's name, or the geometry's ("kv+indexk+scales")
	HeadDim, PageSize int            // the cells' head_dim and page_size
	Layout            *layout.Layout // the layout, or the geometry's first buffer's
	About             string         // what the group measures, for a table's title; "" for a plain layout
}

// A BenchTarget times a group's cells on one plugin process.
type BenchTarget interface {
	// Time takes one chunk of cell id's launches: Warmup untimed, then
	// Iterations timed samples.
	Time(ctx context.Context, id results.Identity, c Chunk) (Timed, error)
	// Close frees the target's arena and detaches the plugin.
	Close(ctx context.Context)
}

// Chunk is one call's worth of a cell's launches.
type Chunk struct {
	Warmup, Iterations int
	// Batched times Batch launches per sample (throughput); else each
	// launch is a sample (tail latency).
	Batched bool
	Batch   int
}

// Timed is a chunk's samples: nanoseconds per launch (per batch when
// batched), what ran them ("cpu", or the GPU's name), and how many
// batched samples may time the host's launch rate rather than the GPU's.
type Timed struct {
	Ns        []float64
	Device    string
	HostPaced int
}

// Can reports whether the kind times cells of this mode, cache and
// timing.
func (b *Bench) Can(m results.Mode, c results.Cache, t results.Timing) bool {
	return slices.Contains(b.Modes, m) && slices.Contains(b.Caches, c) && slices.Contains(b.Timings, t)
}

// EagerHotPerLaunch is what a kind timed from the harness's side (one
// call per sample) can take: its own launches, eager and per launch.
var EagerHotPerLaunch = struct {
	Modes   []results.Mode
	Caches  []results.Cache
	Timings []results.Timing
}{[]results.Mode{results.Eager}, []results.Cache{results.Hot}, []results.Timing{results.PerLaunch}}

// LayoutGroups are a layout kind's groups for plugin d: the setup's
// layouts d declares, each built at the setup's head dim and page size
// (a matrix lists layouts for all its plugins, and bf16scatter has no
// fp8); "all" and "engines" are the groups of GroupNames.
func LayoutGroups(d *plugin.Description, s BenchSetup) ([]BenchGroup, error) {
	declared := map[string]bool{}
	for _, g := range d.Layouts {
		declared[g.Layout] = true
	}
	var names []string
	for _, n := range s.Layouts {
		group, ok := GroupNames(d, n)
		if !ok {
			group = nil
			if declared[n] {
				group = []string{n}
			}
		}
		for _, g := range group {
			if !slices.Contains(names, g) {
				names = append(names, g)
			}
		}
	}
	if len(names) == 0 {
		return nil, fmt.Errorf("plugin %s declares none of the layouts %v (it has %v)", d.Name, s.Layouts, sortedKeys(declared))
	}
	var out []BenchGroup
	for _, n := range names {
		l, err := layout.Builtin(n, s.HeadDim, s.PageSize)
		if err != nil {
			return nil, err
		}
		out = append(out, BenchGroup{Name: l.Name, HeadDim: l.HeadDim, PageSize: l.PageSize, Layout: l})
	}
	return out, nil
}

// WholePages refuses a setup whose tokens are not whole pages of at most
// maxPages per pool: what the kinds that move pages measure. what names
// the kind.
func WholePages(s BenchSetup, what string, maxPages int) error {
	for _, t := range s.Tokens {
		if t%s.PageSize != 0 || t/s.PageSize < 1 || t/s.PageSize > maxPages {
			return fmt.Errorf("tokens %d: %s moves whole pages, 1 to %d pages of %d tokens a pool: want tokens a multiple of %d up to %d (--tokens)",
				t, what, maxPages, s.PageSize, s.PageSize, maxPages*s.PageSize)
		}
	}
	return NoRotation(s, what)
}

// NoRotation refuses --rotate and --slot-run for a kind that takes
// neither (they shape a store's data).
func NoRotation(s BenchSetup, what string) error {
	switch {
	case s.Rotate > 1:
		return fmt.Errorf("rotate %d: %s benches take one data set (--rotate applies to stores): leave it out", s.Rotate, what)
	case s.SlotRun > 1:
		return fmt.Errorf("slot_run %d: %s benches draw no slots (--slot-run applies to stores): leave it out", s.SlotRun, what)
	}
	return nil
}

// PageTokens is tokens P, 8P and 64P (capped at maxPages pages): a page,
// a few, and a pool's worth.
func PageTokens(pageSize, maxPages int) []int {
	var out []int
	for _, n := range []int{1, 8, 64} {
		if n <= maxPages {
			out = append(out, n*pageSize)
		}
	}
	return out
}

func sortedKeys(m map[string]bool) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
