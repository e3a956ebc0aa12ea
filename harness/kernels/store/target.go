package store

import (
	"bytes"
	"context"
	"fmt"
	"time"
	"unsafe"

	"github.com/kvharness/kvharness/harness/arena"
	"github.com/kvharness/kvharness/harness/layout"
	"github.com/kvharness/kvharness/harness/oracle"
	"github.com/kvharness/kvharness/harness/plugin"
	"github.com/kvharness/kvharness/harness/pool"
	"github.com/kvharness/kvharness/harness/protocol"
	"github.com/kvharness/kvharness/harness/protocol/kvpb"
	"github.com/kvharness/kvharness/harness/rundir"
	"github.com/kvharness/kvharness/harness/target"
)

// Config says what to attach.
type Config struct {
	Variant     string
	Layout      *layout.Layout
	Slots       int
	MaxCapacity int           // staging is sized for this many rows
	Seed        int64         // background seed
	Graph       bool          // ask for CUDA-graph replay
	Backend     arena.Backend // where the arena lives; nil means host shared memory
	Phases      Phases        // when set, each case adds its time per stage here
	Value       layout.Mode   // how fp8 values are judged: by the declared recipe (the default) or bit-exact
}

// The pools of a target. All three hold the same background, so a case and
// its twins can run side by side in one round trip and be compared byte for
// byte.
const (
	poolCase     = iota // the case as given
	poolRepeat          // the same case again: determinism
	poolUnpadded        // its valid rows alone: differential
	numPools
)

var poolNames = [numPools]string{"case", "repeat", "unpadded"}

// Target is a plugin attached to an arena of three identical pools.
type Target struct {
	Config
	target.Base
	Declared oracle.Declared
	// GeometryViolation is set when the plugin's declared bytes/token or
	// page bytes differ from the layout's: a stride violation before any
	// case runs.
	GeometryViolation *oracle.Violation
}

// Open describes the plugin, checks its geometry, plans and fills the
// arena and attaches the plugin to it.
func Open(ctx context.Context, p *plugin.Plugin, dir *rundir.Dir, cfg Config) (*Target, error) {
	if cfg.Backend == nil {
		cfg.Backend = arena.SHM{}
	}
	t := &Target{Config: cfg, Base: target.Base{Plugin: p, Variant: cfg.Variant}}
	var err error
	t.Declared, t.GeometryViolation, err = target.Declared(ctx, p, protocol.Store, cfg.Variant, cfg.Layout)
	if err != nil {
		return nil, err
	}
	if t.Layout, err = declaredLayout(cfg.Layout, t.Declared, p.Name); err != nil { // value.go
		return nil, err
	}
	if err := checkSlotWidth(t.Declared.SlotBits, t.Slots, p.Name); err != nil { // slots.go
		return nil, err
	}
	if err := t.plan(dir); err != nil {
		return nil, err
	}
	if err := t.Attach(ctx); err != nil {
		t.Arena.Close()
		return nil, err
	}
	return t, nil
}

// rowsBytes is the staging size of the rows of the largest batch.
func (t *Target) rowsBytes() int {
	return (t.MaxCapacity*t.Layout.RowBytes() + pool.Alignment - 1) / pool.Alignment * pool.Alignment
}

func (t *Target) locOffset() int { return t.Pools.Staging.Off + t.rowsBytes() }

func (t *Target) plan(dir *rundir.Dir) error {
	specs := make([]pool.Spec, numPools)
	for i := range specs {
		specs[i] = pool.Spec{Name: poolNames[i], Layout: t.Layout, Slots: t.Slots}
	}
	g, err := pool.Plan(specs, t.rowsBytes()+8*t.MaxCapacity)
	if err != nil {
		return err
	}
	return t.Plan(dir, t.Backend, g, target.FillRegions(g, t.Seed))
}

// Region is the pool the oracle judges; the others are its copies.
func (t *Target) Region() pool.Region { return t.Pools.Regions[poolCase] }

// run is one store of a batch: a case on one of the target's pools.
type run struct {
	pool int
	c    *Case
}

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
	if err := t.Ensure(ctx); err != nil { // another target of the same plugin may have attached since
		return nil, nil, err
	}
	start := time.Now()
	if err := t.batch(func() error { return t.stage(c, rows) }); err != nil {
		return nil, nil, err
	}
	start = t.clock("stage", start)
	err := t.Plugin.StoreBatch(ctx, t.requests(batch))
	if h := t.Plugin.HandlerTime(); t.Phases != nil && h > 0 {
		t.Phases["store-plugin"] += h
	}
	start = t.clock("store", start)
	var deltas []oracle.Delta
	var staging []oracle.Violation
	berr := t.batch(func() error {
		var cerr error
		if err == nil {
			staging, cerr = t.checkStaging(c, rows)
		}
		start = t.clock("check-staging", start)
		if cerr == nil {
			deltas, cerr = t.collect(batch)
		}
		t.clock("capture", start)
		return cerr
	})
	if berr != nil {
		return nil, nil, berr
	}
	return deltas, staging, err
}

// requests are the store calls of a batch, on inputs staged as stage
// leaves them.
func (t *Target) requests(batch []run) []*kvpb.StoreRequest {
	reqs := make([]*kvpb.StoreRequest, len(batch))
	for i, r := range batch {
		reqs[i] = &kvpb.StoreRequest{Pool: uint32(r.pool),
			Capacity: uint32(r.c.Capacity()), Valid: uint32(r.c.Valid), Padding: kvpb.Padding(r.c.Padding),
			RowsOffset: uint64(t.Pools.Staging.Off), LocOffset: uint64(t.locOffset()), Graph: t.Graph,
			SlotBits: uint32(t.Declared.SlotBits)}
	}
	return reqs
}

// collect captures what each run changed and restores the pools, with one
// reset for the whole batch: on the GPU that is one kernel launch.
func (t *Target) collect(batch []run) ([]oracle.Delta, error) {
	deltas := make([]oracle.Delta, len(batch))
	var changed []pool.Window
	for i, r := range batch {
		region := t.Pools.Regions[r.pool]
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
	if t.Phases != nil {
		t.Phases[stage] += now.Sub(start)
	}
	return now
}

// checkStaging reads the inputs back: a store kernel must leave them as
// staged. One that writes there has a kernel bug (it scribbles on memory
// its caller still holds), and each run of bytes it changed is a staging
// violation, shown with its bytes like any other.
func (t *Target) checkStaging(c *Case, rows [][]uint16) ([]oracle.Violation, error) {
	var out []oracle.Violation
	for _, seg := range t.staged(c, rows) {
		got := make([]byte, len(seg.Data))
		if err := t.Mem().ReadAt(got, seg.Off); err != nil {
			return nil, err
		}
		if !bytes.Equal(got, seg.Data) {
			per := t.Layout.RowBytes()
			if seg.Name == "loc" {
				per = 8
			}
			out = append(out, stagingRuns(seg.Name, per, seg.Data, got)...)
		}
	}
	return out, nil
}

// stagingRuns are the runs of an input segment whose bytes changed, each
// naming the row (rows of per bytes) it starts in.
func stagingRuns(name string, per int, want, got []byte) []oracle.Violation {
	var out []oracle.Violation
	for i := 0; i < len(want); i++ {
		if want[i] == got[i] {
			continue
		}
		if n := len(out); n > 0 && i-(out[n-1].Off+out[n-1].Len) <= oracle.MergeGap {
			out[n-1].Len = i + 1 - out[n-1].Off
			continue
		}
		out = append(out, oracle.Violation{Kind: oracle.Staging, Row: i / per, Field: name, Off: i, Len: 1,
			Detail: "the kernel wrote into its read-only input: a store may write only its pool"})
	}
	for k := range out {
		v := &out[k]
		v.Want, v.Got = oracle.Clip(want[v.Off:v.Off+v.Len]), oracle.Clip(got[v.Off:v.Off+v.Len])
	}
	return out
}

// stage writes rows and loc into staging.
func (t *Target) stage(c *Case, rows [][]uint16) error {
	for _, seg := range t.staged(c, rows) {
		if err := t.Mem().WriteAt(seg.Data, seg.Off); err != nil {
			return err
		}
	}
	return nil
}

// staged is a case's staging content: its rows, then its slots. Rows are
// the host's bytes: kvharness runs on little-endian machines only, as the
// kernels do.
func (t *Target) staged(c *Case, rows [][]uint16) []target.Segment {
	rb := t.Layout.RowBytes()
	r := make([]byte, c.Capacity()*rb)
	for i, row := range rows[:c.Capacity()] {
		copy(r[i*rb:], unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(row))), rb))
	}
	loc := putSlots(c.Loc, t.Declared.SlotBits) // at the declared width (slots.go)
	return []target.Segment{{Name: "rows", Off: t.Pools.Staging.Off, Data: r}, {Name: "loc", Off: t.locOffset(), Data: loc}}
}
