// Package kind is the shape every kernel kind has, as the commands drive
// it: a Kind value names the kind and says how to check it, replay a saved
// case of it (on the backend the case ran on), decode its repro cases,
// fuzz it, which pool a check runs on by default, which flags it refuses,
// and how kvharness bench measures it (Bench). Each kind package
// (harness/kernels/store, read, transfer, load, pdasync) exports one;
// package kernels lists them in one table, and the commands ask no kind
// anything by name.
//
// A kind builds its check on the shared kit: a target (package target) on
// an arena (package arena), a property system run by package property, a
// report schema (package report). The helpers here are the steps every
// kind's Check and Replay take the same way.
package kind

import (
	"context"
	"encoding/json"
	"slices"

	"github.com/kvharness/kvharness/harness/arena"
	"github.com/kvharness/kvharness/harness/layout"
	"github.com/kvharness/kvharness/harness/plugin"
	"github.com/kvharness/kvharness/harness/protocol"
	"github.com/kvharness/kvharness/harness/report"
	"github.com/kvharness/kvharness/harness/rundir"
	"github.com/kvharness/kvharness/harness/shard"
	"github.com/kvharness/kvharness/harness/workload"
)

// Kind is one kernel kind.
type Kind struct {
	Name protocol.Kernel
	// Layouts says whether the kind's suites run per layout (stores,
	// reads); a kind without (transfers) brings its own geometry.
	Layouts bool
	// Graphs says whether the kind replays captured CUDA graphs (--graph).
	Graphs bool
	// Traces says whether the kind replays recorded engine traces (--trace).
	Traces bool
	// Check runs the kind's properties against the session's plugin.
	Check func(ctx context.Context, s *Session, p Params) (*report.Run, error)
	// Replay checks a repro file's case again on backend b (the one the
	// file records, unless the user overrode it) and in r.Graph's mode;
	// nil when it passes.
	Replay func(ctx context.Context, s *Session, r *report.Repro, l *layout.Layout, b arena.Backend) (*report.Failure, error)
	// Decode reads a repro file's case, strictly, and validates it
	// against a pool of slots.
	Decode func(data json.RawMessage, slots int) (workload.Case, error)
	// Fuzz is the kind's go test fuzz target.
	Fuzz Fuzz
	// Slots is the pool a check runs on when --slots is not given, on
	// place p, for pages of pageSize tokens; nil: DefaultSlots. SlotsHelp
	// says it in --slots's help ("stores 131072 on cpu and 1048576 on
	// cuda"); empty for a kind on DefaultSlots.
	Slots     func(p arena.Place, pageSize int) int
	SlotsHelp string
	// Validate refuses settings of a check this kind cannot run, naming
	// the flag to change (a store's --max-capacity past its bound); nil:
	// the kind takes any the commands allow.
	Validate func(p Params) error
	// Bench is how kvharness bench measures the kind; nil: it does not.
	Bench *Bench
	// Warm, where a kind has one, opens and closes the target of the
	// first row that Check(p) would open, so that a plugin process
	// started ahead of its check compiles or loads what that row's
	// attach needs (CUDA kernels) while another check runs; the check
	// then finds them made. It changes no verdict: the plugin sees one
	// attach more. nil: nothing worth warming.
	Warm func(ctx context.Context, s *Session, p Params) error
	// Uses, for a kind with no service of its own (sequence), is the kinds
	// whose kernels it drives: a plugin that serves them serves it.
	Uses []protocol.Kernel
}

// ServedBy reports whether a plugin whose Describe lists kernels can be
// checked as this kind: it lists the kind, or every kind it uses.
func (k *Kind) ServedBy(kernels []protocol.Kernel) bool {
	if slices.Contains(kernels, k.Name) {
		return true
	}
	for _, u := range k.Uses {
		if !slices.Contains(kernels, u) {
			return false
		}
	}
	return len(k.Uses) > 0
}

// DefaultSlots is the pool of a kind that names none: a read's 4,096
// slots, every key of which it scores.
const DefaultSlots = 4096

// PoolSlots is the pool a check of k runs on when --slots is not given.
func (k *Kind) PoolSlots(p arena.Place, pageSize int) int {
	if k.Slots == nil {
		return DefaultSlots
	}
	return k.Slots(p, pageSize)
}

// CheckParams refuses settings k cannot run (Validate).
func (k *Kind) CheckParams(p Params) error {
	if k.Validate == nil {
		return nil
	}
	return k.Validate(p)
}

// Fuzz is a kind's go test fuzz target (package fuzzing's Lane makes it).
type Fuzz struct {
	// Name is the target's, and Package the one that holds it, from the
	// source root; the out-of-process lane is Package's fuzz folder.
	Name, Package string
	// Checker opens the checker of the target's inputs against the plugin
	// the environment names: what kvharness fuzz-check serves to the
	// out-of-process lane (package remote). servers are the bundled
	// kernels, for KVHARNESS_FUZZ_MODE=in-process.
	Checker func(ctx context.Context, servers plugin.Servers) (FuzzChecker, error)
}

// A FuzzChecker checks fuzz inputs: a failure is the crasher's message
// (empty for a passing input), features what the input's case chose.
type FuzzChecker interface {
	Verdict(ctx context.Context, data []byte) (features []string, failure string)
	Close()
}

// Session is a running plugin and its run directory: what a kind's check
// and replay run on.
type Session struct {
	Plugin *plugin.Plugin
	Dir    *rundir.Dir
	// Desc is the plugin's Describe for the run's variant, head dimension
	// and page size.
	Desc *plugin.Description
	// PluginArg is how the user named the plugin: what a repro file of
	// this run starts again.
	PluginArg string
	// Spawn starts another process of the same plugin, with the same
	// trust; the caller closes it.
	Spawn func(context.Context) (*plugin.Plugin, error)
	// Identity is what started the plugin, hashed (its SHA-256 and what
	// of); nil where nothing was hashed (tests). Name and version come
	// from Desc.
	Identity *report.PluginIdentity
}

// Params are a check run's settings.
type Params struct {
	Variant string
	Layouts []*layout.Layout // for kinds with Layouts
	Padding string           // stores: a convention name, or "all"
	// Addressing is how stores are addressed: "slots", "page-table", or
	// "" for the plugin's (page-table where it declares that alone).
	Addressing string
	Cases      int // passing cases wanted per row
	Seed       int64
	Setup
	Value       layout.Mode // stores: fp8 values judged by the declared recipe (the default) or bit-exact
	Jobs        int         // rows checked at once; 0 or 1: one after another
	MaxFaults   int
	StopAtFirst bool // end at the first failing row (mutant hunts)
	// Shard is the part of the rows checked (check --shard); the zero
	// Spec is all of them.
	Shard shard.Spec
	// Stress checks every case this many times, several at once on plugin
	// processes of their own (check --stress); 0 or 1: once.
	Stress int
	// Trace is a recorded engine trace the sequence kind replays and
	// draws from (check --trace); empty for none.
	Trace string
}

// Setup is the sizes and the place of a run's arenas: the settings a
// mutants run gives every subject's check alike, so that both runs take
// them as one struct.
type Setup struct {
	Slots       int
	MaxCapacity int
	HeadDim     int
	PageSize    int
	// Backend is where the arenas live: the run's one decision from its
	// flags (arena.Want.Choose), never nil.
	Backend arena.Backend
	Graph   bool
	// Draw says which axes of the geometry each row draws from what the
	// plugin accepts (see Shapes) instead of taking HeadDim and PageSize:
	// a check's default, where --head-dim and --page-size pin an axis.
	// The zero value draws nothing.
	Draw workload.Axes
	// Far raises the pools of the kinds that address slots to reach past
	// 4 GiB of byte offsets, checked in windows of sparse memory (see
	// package pool's FarSlots): a check's default, where --slots pins
	// the pool. On the host it needs a tmpfs run directory.
	Far bool
}

// Place is where the run's arenas live.
func (s Setup) Place() arena.Place {
	return s.Backend.Place()
}

// pluginName and pluginVersion are what the plugin said of itself; empty
// for a session that has no description (a test's).
func (s *Session) pluginName() string {
	if s.Desc == nil {
		return ""
	}
	return s.Desc.Name
}

func (s *Session) pluginVersion() string {
	if s.Desc == nil {
		return ""
	}
	return s.Desc.Version
}

// Header is the report header of a check run with these settings.
func (p Params) Header(s *Session) report.Header {
	ran := s.ran(p.Backend, p.Graph)
	ran.HeadDim, ran.PageSize, ran.MaxCapacity = p.HeadDim, p.PageSize, p.MaxCapacity
	return report.Header{Plugin: s.pluginName(), Version: s.pluginVersion(), Variant: p.Variant, PluginArg: s.PluginArg,
		Cases: p.Cases, Slots: p.Slots, MaxCapacity: p.MaxCapacity, Seed: p.Seed, Backend: p.Place().String(), Graph: p.Graph,
		Shard: p.shardName(), Ran: ran, Far: p.Far}
}

// RanOn is how cases on backend b ran, in graph mode or not, as a repro
// file records it.
func RanOn(b arena.Backend, graph bool) report.Ran {
	pl := b.Place()
	if !pl.OnDevice() {
		return report.Ran{Backend: report.BackendCPU, Graph: graph}
	}
	return report.Ran{Backend: report.BackendCUDA, Device: pl.Device, DeviceOrdinal: pl.Ordinal, Graph: graph}
}

// ran is what a repro file of this session's cases on backend b, in graph
// mode or not, records of how they ran; the kind adds its geometry.
func (s *Session) ran(b arena.Backend, graph bool) report.Ran {
	r := RanOn(b, graph)
	if s.Identity != nil {
		id := *s.Identity
		id.Name, id.Version = s.pluginName(), s.pluginVersion()
		r.Identity = &id
	}
	return r
}

// shardName is the header's shard: "" for a whole run, else "i/n".
func (p Params) shardName() string {
	if p.Shard.IsWhole() {
		return ""
	}
	return p.Shard.String()
}
