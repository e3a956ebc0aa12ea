package store

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/kvharness/kvharness/harness/arena"
	"github.com/kvharness/kvharness/harness/layout"
	"github.com/kvharness/kvharness/harness/oracle"
	"github.com/kvharness/kvharness/harness/plugin"
	"github.com/kvharness/kvharness/harness/pool"
	"github.com/kvharness/kvharness/harness/protocol/doorbell"
	"github.com/kvharness/kvharness/harness/protocol/kvpb"
	"github.com/kvharness/kvharness/harness/rundir"
	"github.com/kvharness/kvharness/harness/target"
	"github.com/kvharness/kvharness/harness/workload"
)

// Config says what to attach.
type Config struct {
	Variant     string
	Layout      *layout.Layout
	Slots       int
	MaxCapacity int           // staging is sized for this many rows
	Seed        int64         // background seed
	Graph       bool          // ask for CUDA-graph replay
	Backend     arena.Backend // where the arena lives: the run's (arena.Want.Choose)
	Phases      Phases        // when set, each case adds its time per stage here
	Value       layout.Mode   // how fp8 values are judged: by the declared recipe (the default) or bit-exact
	// Sets is how many pool sets (each a case, repeat and unpadded pool,
	// with staging of its own) the target keeps for checking drawn cases
	// ahead of the property runner (see ahead.go); 0 keeps only the set
	// exact checks use, AutoSets as many as the backend affords.
	Sets int
	// Inputs are the static scales each store passes its kernel, for a
	// layout whose fp8 or fp4 fields store none; when the layout has such
	// fields and Inputs none, the target draws them from Seed (inputs.go).
	Inputs layout.Inputs
	// Addressing is how the target's stores are addressed; a plugin must
	// declare page-table addressing to be opened for it.
	Addressing Addressing
}

// The pools of a set. All hold the same background, so a case and its
// twins can run side by side in one round trip and be compared byte for
// byte, and a case checked on one set leaves what it would on any other.
const (
	poolCase     = iota // the case as given
	poolRepeat          // the same case again: determinism
	poolUnpadded        // its valid rows alone: differential
	numPools
)

var poolNames = [numPools]string{"case", "repeat", "unpadded"}

// Target is a plugin attached to an arena of identical pools: set 0 for
// exact checks, Sets more for cases checked ahead.
type Target struct {
	Config
	*target.Base
	Declared oracle.Declared
	// GeometryViolation is set when the plugin's declared bytes/token or
	// page bytes differ from the layout's: a stride violation before any
	// case runs.
	GeometryViolation *oracle.Violation

	exact   int        // the set exact checks run on (System.Check moves it)
	group   *group     // the targets sharing the arena
	first   int        // the arena's index of this target's first pool
	stageAt int        // where this target's staging starts in the arena
	ahead   *ahead     // cases checked ahead, when Sets allows (ahead.go)
	lazy    arena.Lazy // the memory, when the pools are filled lazily (lazy.go)
	// fillLater fills the sets checked ahead on; nil once they are.
	fillLater func() error
	blocks    int64           // its allocated size after the last materialization
	staging   []*stagedSet    // per set: what its staging region must hold (staging.go)
	rows      rowCache        // rows of small seeds, as oracles build them (oracle.go)
	live      workload.Ranges // the slots cases draw from, when the pool is checked in windows (reach.go)
	phaseMu   sync.Mutex      // Phases is written by the ahead pipeline too
	closed    bool
}

// group is the targets of one arena and attach (OpenGroup).
type group struct {
	target.Base
	open   int    // targets not yet closed
	bellAt int    // the doorbell window's offset in the arena; 0 for none
	sends  sender // how stores go: by the current attach's doorbell, or gRPC (client.go)
}

// Open describes the plugin, checks its geometry, plans and fills the
// arena and attaches the plugin to it.
func Open(ctx context.Context, p *plugin.Plugin, dir *rundir.Dir, cfg Config) (*Target, error) {
	ts, err := OpenGroup(ctx, p, dir, cfg)
	if err != nil {
		return nil, err
	}
	return ts[0], nil
}

// OpenGroup opens a target per configuration on one arena, attached once.
// A plugin holds one attachment at a time, so targets of separate arenas
// that take turns attach again at every turn (a remap, and page faults on
// every page the next case touches); the targets of a group never do. A
// fuzz run, which picks a layout per input, keeps one. The configurations
// share the plugin's variant and the first's backend; the arena is freed
// when every target is closed.
func OpenGroup(ctx context.Context, p *plugin.Plugin, dir *rundir.Dir, cfgs ...Config) ([]*Target, error) {
	backend := cfgs[0].Backend
	if backend == nil {
		return nil, arena.ErrNoBackend
	}
	g := &group{Base: target.Base{Plugin: p, Variant: cfgs[0].Variant}, open: len(cfgs)}
	ts := make([]*Target, len(cfgs))
	var specs []pool.Spec
	staging := 0
	for i, cfg := range cfgs {
		cfg.Backend = backend
		if cfg.Sets == AutoSets {
			cfg.Sets = setsFor(cfg.Layout, cfg.Slots, backend)
		}
		t := &Target{Config: cfg, Base: &g.Base, group: g, first: len(specs), stageAt: staging}
		var err error
		t.Declared, t.GeometryViolation, err = target.Declared(ctx, p, Name, cfg.Variant, cfg.Layout)
		if err != nil {
			return nil, err
		}
		if err := takesAddressing(ctx, p, cfg); err != nil { // pagetable.go
			return nil, err
		}
		if t.Layout, err = declaredLayout(cfg.Layout, t.Declared, p.Name); err != nil { // value.go
			return nil, err
		}
		if t.Layout, err = t.Layout.ForPool(t.Slots); err != nil { // where a later region (V pages) starts
			return nil, err
		}
		if t.Inputs, err = inputsFor(t.Layout, cfg.Inputs, cfg.Seed); err != nil { // inputs.go
			return nil, err
		}
		if err := checkSlotWidth(t.Declared.SlotBits, t.Slots, p.Name); err != nil { // slots.go
			return nil, err
		}
		t.live = liveRanges(t.Layout, t.Slots) // reach.go
		specs = append(specs, t.specs(len(cfgs) > 1)...)
		staging += t.numSets() * t.slotBytes()
		ts[i] = t
	}
	bell := rings(ctx, p, cfgs[0], backend)
	if bell {
		staging = align(staging) + doorbell.Size
	}
	geo, err := pool.Plan(specs, staging)
	if err != nil {
		return nil, err
	}
	for _, t := range ts {
		t.stageAt += geo.Staging.Off
	}
	if bell {
		g.bellAt = geo.Staging.End() - align(doorbell.Size)
	}
	g.Resident, g.Backed = resident(ts, geo), backed(ts, geo)
	if err := g.Plan(dir, backend, geo, fillTargets(geo, ts)); err != nil {
		return nil, err
	}
	if err := g.attach(ctx); err != nil {
		g.Arena.Close()
		return nil, err
	}
	return ts, nil
}

// rings reports whether the group's stores go through a doorbell: the
// plugin declares one and the arena is host shared memory, mapped here.
func rings(ctx context.Context, p *plugin.Plugin, cfg Config, b arena.Backend) bool {
	if b.Place().OnDevice() {
		return false
	}
	l := cfg.Layout // the request target.Declared made, answered from memory
	d, err := p.Describe(ctx, target.QueryFor(cfg.Variant, l))
	return err == nil && d.Doorbell
}

// attach gives the plugin the arena, with the doorbell window when the
// group has one, and opens the doorbell.
func (g *group) attach(ctx context.Context) error {
	req := target.Request(g.Arena, g.Pools, g.Variant)
	var box *doorbell.Box
	if mapped, ok := g.Mem().(interface{ Bytes() []byte }); ok && g.bellAt > 0 {
		var err error
		if box, err = doorbell.Open(mapped.Bytes()[g.bellAt : g.bellAt+doorbell.Size]); err != nil {
			return err
		}
		req.Doorbell = &kvpb.Window{Offset: uint64(g.bellAt), Size: doorbell.Size}
	}
	g.sends.bell = nil
	if _, err := g.Plugin.Attach(ctx, &g.Base, req); err != nil {
		return err
	}
	g.sends.bell = g.Plugin.OpenDoorbell(box)
	return nil
}

// ensure attaches again when another target attached since, or the
// plugin restarted.
func (g *group) ensure(ctx context.Context) error {
	if g.Plugin.AttachedTo(&g.Base) {
		return nil
	}
	return g.attach(ctx)
}

// storeBatch runs the calls in one round trip: by doorbell when the
// attach has one, by gRPC otherwise. It returns the plugin's handler
// time, when it said.
func (g *group) storeBatch(ctx context.Context, reqs []*kvpb.StoreRequest) (time.Duration, error) {
	return g.sends.send(ctx, g.Plugin, reqs)
}

// fillTargets fills the exact set of each target planned in geo, guards
// included, with the background of its seed: lazily when the set is large
// (lazy.go) and the memory can. The sets a target checks ahead on are
// filled when its first window starts (fillAhead): a check whose kernel
// fails in its first cases, as a broken one does, never pays for them.
func fillTargets(geo pool.Geometry, ts []*Target) func(arena.Memory) error {
	return func(mem arena.Memory) error {
		for _, t := range ts {
			lazy, ok := mem.(arena.Lazy)
			if ok && lazy.Sparse() && t.fillsLazily() {
				t.lazy = lazy
			}
			regions := geo.Regions[t.first : t.first+t.numSets()*numPools]
			if t.live != nil && t.lazy != nil {
				if err := t.fillFar(mem, regions); err != nil {
					return err
				}
				continue
			}
			for _, r := range regions[:numPools] {
				fill := mem.Fill
				if t.lazy != nil {
					fill = lazy.FillLazy
				}
				if err := fill(r.Span(), uint64(t.Seed)); err != nil {
					return err
				}
			}
			if ahead := regions[numPools:]; len(ahead) > 0 {
				t.fillLater = func() error { return fillAheadSets(mem, ahead, uint64(t.Seed)) }
			}
		}
		// Staging (and the doorbell) hold their pages from the start: on
		// a sparse arena a first write there would grow the file, as a
		// stray write into a hole does (lazy.go).
		if lazy, ok := mem.(arena.Lazy); ok && lazy.Sparse() {
			if err := lazy.Reserve(geo.Staging); err != nil {
				return err
			}
		}
		return mem.WriteAt(make([]byte, geo.Staging.Len), geo.Staging.Off)
	}
}

// fillFar fills a far pool's sets lazily, every page a hole (reach.go),
// but their live windows: the exact set's now (other pages as cases name
// them), the sets checked ahead's when the first window needs them (after
// a scan proves nothing wrote there before).
func (t *Target) fillFar(mem arena.Memory, regions []pool.Region) error {
	for _, r := range regions {
		if err := t.lazy.FillLazy(r.Span(), uint64(t.Seed)); err != nil {
			return err
		}
	}
	for _, r := range regions[:numPools] {
		if err := t.lazy.Materialize(liveWindows(t.Layout, r, t.live)); err != nil {
			return err
		}
	}
	ahead := regions[numPools:]
	if len(ahead) == 0 {
		return nil
	}
	t.fillLater = func() error {
		for _, r := range ahead {
			changed, err := mem.Changed(r.Span())
			if err != nil {
				return fmt.Errorf("scan the pools to check ahead on before filling them: %w", err)
			}
			if len(changed) > 0 {
				return &UnfilledWriteError{Region: r.Name, At: changed[0]}
			}
			if err := t.lazy.Materialize(liveWindows(t.Layout, r, t.live)); err != nil {
				return fmt.Errorf("fill the pools to check ahead on: %w", err)
			}
		}
		return nil
	}
	return nil
}

// backed are the windows of the arena of targets planned in geo that a
// device backs when a target's pools reach far: its staging, each dense
// target's regions, each far target's live windows in every set (its
// cases name nothing else: the shrinker keeps to them too). Nil when no
// pool reaches far: the arena is backed whole.
func backed(ts []*Target, geo pool.Geometry) []pool.Window {
	far := false
	var out []pool.Window
	for _, t := range ts {
		for _, r := range geo.Regions[t.first : t.first+t.numSets()*numPools] {
			if t.live == nil {
				out = append(out, r.Span())
				continue
			}
			far = true
			out = append(out, liveWindows(t.Layout, r, t.live)...)
		}
	}
	if !far {
		return nil
	}
	return append(out, geo.Staging)
}

// resident is what the arena of targets planned in geo will hold at most
// when a target's pools reach far (reach.go): its staging, each dense
// target's pools, each far target's live windows in every set and room
// for what its exact set materializes. Zero (all of it) otherwise.
func resident(ts []*Target, geo pool.Geometry) int {
	far := false
	n := geo.Staging.Len
	for _, t := range ts {
		n += t.numSets() * numPools * liveBytes(t.Layout, t.Slots)
		if t.live != nil {
			far = true
			n += exactRoom
		}
	}
	if !far {
		return 0
	}
	return n
}

// fillAheadSets fills the regions of the sets checked ahead on, once the
// exact checks before them proved that nothing wrote there: until now they
// held their first baseline (zeros), and the fill would erase a stray
// write that landed in them.
func fillAheadSets(mem arena.Memory, regions []pool.Region, seed uint64) error {
	for _, r := range regions {
		changed, err := mem.Changed(r.Span())
		if err != nil {
			return fmt.Errorf("scan the pools to check ahead on before filling them: %w", err)
		}
		if len(changed) > 0 {
			return &UnfilledWriteError{Region: r.Name, At: changed[0]}
		}
		if err := mem.Fill(r.Span(), seed); err != nil {
			return fmt.Errorf("fill the pools to check ahead on: %w", err)
		}
	}
	return nil
}

// UnfilledWriteError is a write found in pools no case had used yet,
// before the target filled them to check ahead on: the kernel wrote
// outside the pools of the exact checks that ran until then.
type UnfilledWriteError struct {
	Region string
	At     pool.Window // the first changed range, arena offsets
}

func (e *UnfilledWriteError) Error() string {
	return fmt.Sprintf("arena bytes [%d,%d) of pool %s changed before any case used that pool: the kernel wrote outside its case's pools "+
		"during one of the first %d cases, checked exactly on the first pool set (a stray write, whichever case made it; on the GPU, --sanitize memcheck names the kernel)",
		e.At.Off, e.At.End(), e.Region, firstExact)
}

func align(n int) int { return (n + pool.Alignment - 1) / pool.Alignment * pool.Alignment }

// Close stops checking ahead; the last target of a group to close
// detaches and frees the arena (see target.Base.Close).
func (t *Target) Close(ctx context.Context) {
	if t.closed {
		return
	}
	t.stopAhead(ctx)
	t.closed = true
	if t.group.open--; t.group.open == 0 {
		t.group.Close(ctx)
	}
}

// rowsBytes is the staging size of the rows of the largest batch.
func (t *Target) rowsBytes() int { return align(t.MaxCapacity * t.Layout.RowBytes()) }

// slotBytes is one set's staging: its rows, then its slots.
func (t *Target) slotBytes() int { return align(t.rowsBytes() + 8*t.MaxCapacity) }

// rowsOffset and locOffset are where set's inputs are staged.
func (t *Target) rowsOffset(set int) int { return t.stageAt + set*t.slotBytes() }

func (t *Target) locOffset(set int) int { return t.rowsOffset(set) + t.rowsBytes() }

// numSets counts every set, the exact one included.
func (t *Target) numSets() int { return 1 + t.Sets }

// fillAhead fills the sets checked ahead on, the first time a window
// needs them.
func (t *Target) fillAhead() error {
	f := t.fillLater
	if f == nil {
		return nil
	}
	t.fillLater = nil
	return f()
}

// specs are the target's pools, set by set; in a group their names carry
// the layout's.
func (t *Target) specs(named bool) []pool.Spec {
	var specs []pool.Spec
	for set := range t.numSets() {
		for i := range numPools {
			name := poolNames[i]
			if set > 0 {
				name = fmt.Sprintf("%s.%d", name, set)
			}
			if named {
				name = t.Layout.Name + "/" + name
			}
			specs = append(specs, pool.Spec{Name: name, Layout: t.Layout, Slots: t.Slots})
		}
	}
	return specs
}

// Region is the pool the oracle judges; the others are its copies.
func (t *Target) Region() pool.Region { return t.Pools.Regions[t.first+poolCase] }

// run is one store of a batch: a case on one pool of one set.
type run struct {
	set, pool int
	c         *Case
}

// index is the arena's index of r's pool.
func (t *Target) index(r run) int { return t.first + r.set*numPools + r.pool }

// regionOf is r's pool.
func (t *Target) regionOf(r run) pool.Region { return t.Pools.Regions[t.index(r)] }

// runs stages the rows and slots once (every run of a batch reads a prefix
// of them), executes the stores in one round trip, and returns what each
// changed, leaving every pool as it found it (unless a capture fails,
// which stops the run), and the runs of staged input bytes the kernel
// wrote.
func (t *Target) runs(ctx context.Context, rows [][]uint16, batch ...run) ([]oracle.Delta, []oracle.Violation, error) {
	c := batch[0].c
	if c.Capacity() > t.MaxCapacity {
		return nil, nil, fmt.Errorf("case capacity %d exceeds the staging size %d", c.Capacity(), t.MaxCapacity)
	}
	if !t.lazyRuns(batch) {
		deltas, staging, _, err := t.runOnce(ctx, rows, batch)
		return deltas, staging, err
	}
	defer t.release()
	var first []oracle.Delta
	var firstStaging []oracle.Violation
	var seen []pool.Window // the stray pages of earlier attempts
	for attempt := 0; ; attempt++ {
		deltas, staging, strays, err := t.runOnce(ctx, rows, batch)
		if attempt == 0 {
			first, firstStaging = deltas, staging
		}
		switch {
		case err != nil:
			return deltas, staging, err
		case len(strays) == 0 && attempt > 0 && !t.repeated(batch, deltas, seen):
			// A stray page the replay left alone was written before
			// the case or only once: the reset erased it, so the first
			// attempt's deltas (exact but where holes read as zeros)
			// are the evidence.
			return first, firstStaging, nil
		case len(strays) == 0 || attempt == maxReplays:
			return deltas, staging, nil
		}
		seen = append(seen, strays...)
	}
}

// repeated reports whether the deltas of batch's runs change every page
// of strays (arena offsets): the replay wrote them again.
func (t *Target) repeated(batch []run, deltas []oracle.Delta, strays []pool.Window) bool {
	for _, s := range strays {
		hit := false
		for i, r := range batch {
			base := t.regionOf(r).Pool.Off
			for _, w := range deltas[i].Windows {
				if w.Off+base < s.End() && s.Off < w.End()+base {
					hit = true
				}
			}
		}
		if !hit {
			return false
		}
	}
	return true
}

// runOnce is one try of runs: on a lazy target it also reports whether
// the runs wrote holes, which makes their deltas inexact (a hole reads as
// zeros, not as the background); those pages are materialized by the
// reset, so that a replay is exact.
func (t *Target) runOnce(ctx context.Context, rows [][]uint16, batch []run) ([]oracle.Delta, []oracle.Violation, []pool.Window, error) {
	if err := t.group.ensure(ctx); err != nil { // another target of the same plugin may have attached since
		return nil, nil, nil, err
	}
	start := time.Now()
	if err := t.batch(func() error {
		if err := t.materialize(batch); err != nil {
			return err
		}
		return t.stage(batch[0].set, batch[0].c, rows)
	}); err != nil {
		return nil, nil, nil, err
	}
	start = t.clock("stage", start)
	h, err := t.group.storeBatch(ctx, t.requests(batch))
	if h > 0 {
		t.addPhase("store-plugin", h)
	}
	start = t.clock("store", start)
	var deltas []oracle.Delta
	var staging []oracle.Violation
	var strays []pool.Window
	berr := t.batch(func() error {
		var cerr error
		if err == nil {
			staging, cerr = t.checkStaging(batch[0].set)
		}
		start = t.clock("check-staging", start)
		if cerr != nil {
			return cerr
		}
		if strays, cerr = t.strayed(batch); cerr != nil {
			return cerr
		}
		deltas, cerr = t.collect(batch)
		t.clock("capture", start)
		return cerr
	})
	if berr != nil {
		return nil, nil, nil, berr
	}
	return deltas, staging, strays, err
}

// requests are the store calls of a batch, on inputs staged as stage
// leaves them.
func (t *Target) requests(batch []run) []*kvpb.StoreRequest {
	reqs := make([]*kvpb.StoreRequest, len(batch))
	for i, r := range batch {
		reqs[i] = &kvpb.StoreRequest{Pool: uint32(t.index(r)),
			Capacity: uint32(r.c.Capacity()), Valid: uint32(r.c.Valid), Padding: kvpb.Padding(r.c.Padding),
			RowsOffset: uint64(t.rowsOffset(r.set)), LocOffset: uint64(t.locOffset(r.set)), Graph: t.Graph,
			SlotBits: uint32(t.Declared.SlotBits), RowElems: uint32(t.Layout.RowElems()), Scales: t.scalesProto(),
			PageTable: tableProto(r.c.Table)}
	}
	return reqs
}

// collect captures what each run changed and restores the pools, with one
// reset for the whole batch: on the GPU that is one kernel launch.
func (t *Target) collect(batch []run) ([]oracle.Delta, error) {
	deltas := make([]oracle.Delta, len(batch))
	var changed []pool.Window
	for i, r := range batch {
		region := t.regionOf(r)
		d, err := oracle.Capture(t.Mem(), region)
		if err != nil {
			return nil, err
		}
		deltas[i] = d
		for _, w := range d.Windows {
			changed = append(changed, pool.Window{Off: w.Off + region.Pool.Off, Len: w.Len})
		}
	}
	return deltas, t.Mem().Reset(changed)
}

// batcher is a pool.Memory that runs a function's calls on it as one unit:
// the CUDA backend, where each call alone is a trip to its device thread.
type batcher interface {
	Batch(f func() error) error
}

// batch runs f as one unit of the target's memory, if it has units.
func (t *Target) batch(f func() error) error {
	if b, ok := t.Mem().(batcher); ok {
		return b.Batch(f)
	}
	return f()
}

// Phases is where checked cases spent their wall time, by stage; a Target
// given one adds to it (benchmarks report it per case).
type Phases map[string]time.Duration

// clock adds the time since start to stage, when the target keeps
// Phases, and returns the time now.
func (t *Target) clock(stage string, start time.Time) time.Time {
	now := time.Now()
	t.addPhase(stage, now.Sub(start))
	return now
}

func (t *Target) addPhase(stage string, d time.Duration) {
	if t.Phases != nil {
		t.phaseMu.Lock()
		t.Phases[stage] += d
		t.phaseMu.Unlock()
	}
}

// OpenSupported opens, as one group, a target for each layout of ls the
// plugin stores (cfg gives each its configuration); the result has an
// entry per layout, nil where the plugin lacks it.
func OpenSupported(ctx context.Context, p *plugin.Plugin, dir *rundir.Dir, ls []*layout.Layout, cfg func(*layout.Layout) Config) ([]**Target, error) {
	var cfgs []Config
	var at []int
	for i, l := range ls {
		c := cfg(l)
		_, _, err := target.Declared(ctx, p, Name, c.Variant, l)
		if errors.Is(err, target.ErrUnsupported) {
			continue
		}
		if err != nil {
			return nil, err
		}
		cfgs, at = append(cfgs, c), append(at, i)
	}
	out := make([]**Target, len(ls))
	if len(cfgs) == 0 {
		return out, nil
	}
	ts, err := OpenGroup(ctx, p, dir, cfgs...)
	if err != nil {
		return nil, err
	}
	for k, t := range ts {
		out[at[k]] = &t
	}
	return out, nil
}
