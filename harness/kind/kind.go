// Package kind is the shape every kernel kind has, as the commands drive
// it: a Kind value names the kind and says how to check it, replay a saved
// case of it, decode its repro cases and fuzz it. Each kind package
// (harness/kernels/store, read, transfer) exports one; package kernels
// lists them in one table.
//
// A kind builds its check on the shared kit: a target (package target) on
// an arena (package arena), a property system run by package property, a
// report schema (package report). The helpers here are the steps every
// kind's Check and Replay take the same way.
package kind

import (
	"context"
	"encoding/json"

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
	// Check runs the kind's properties against the session's plugin.
	Check func(ctx context.Context, s *Session, p Params) (*report.Run, error)
	// Replay checks a repro file's case again; nil when it passes.
	Replay func(ctx context.Context, s *Session, r *report.Repro, l *layout.Layout) (*report.Failure, error)
	// Decode reads a repro file's case, strictly, and validates it
	// against a pool of slots.
	Decode func(data json.RawMessage, slots int) (workload.Case, error)
	// Fuzz is the kind's go test fuzz target.
	Fuzz Fuzz
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
}

// Params are a check run's settings.
type Params struct {
	Variant string
	Layouts []*layout.Layout // for kinds with Layouts
	Padding string           // stores: a convention name, or "all"
	Cases   int              // passing cases wanted per row
	Seed    int64
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
}

// Setup is the sizes and the place of a run's arenas: the settings a
// mutants run gives every subject's check alike, so that both runs take
// them as one struct.
type Setup struct {
	Slots int
	// DefaultSlots says Slots is the kind's default, not the user's: a
	// kind may size it down for a layout whose tokens are large (the
	// engines' K/V caches: 4 KiB a token at 8 heads × 128).
	DefaultSlots bool
	MaxCapacity int
	HeadDim     int
	PageSize    int
	Backend     arena.Backend // nil: host shared memory
	Graph       bool
}

// Place is where the run's arenas live.
func (s Setup) Place() arena.Place {
	return arena.OrSHM(s.Backend).Place()
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
	return report.Header{Plugin: s.pluginName(), Version: s.pluginVersion(), Variant: p.Variant, PluginArg: s.PluginArg,
		Cases: p.Cases, Slots: p.Slots, MaxCapacity: p.MaxCapacity, Seed: p.Seed, Backend: p.Place().String(), Graph: p.Graph,
		Shard: p.shardName()}
}

// shardName is the header's shard: "" for a whole run, else "i/n".
func (p Params) shardName() string {
	if p.Shard.IsWhole() {
		return ""
	}
	return p.Shard.String()
}
