package check

import (
	"context"
	"encoding/binary"
	"fmt"
	"unsafe"

	"github.com/kvharness/kvharness/harness/layout"
	"github.com/kvharness/kvharness/harness/oracle"
	"github.com/kvharness/kvharness/harness/plugin"
	"github.com/kvharness/kvharness/harness/pool"
	"github.com/kvharness/kvharness/harness/protocol/kvpb"
	"github.com/kvharness/kvharness/harness/workload"
)

// Config says what to attach.
type Config struct {
	Variant     string
	Layout      *layout.Layout
	Slots       int
	MaxCapacity int    // staging is sized for this many rows
	Seed        uint64 // background seed
	Graph       bool   // ask for CUDA-graph replay
}

// Target is a plugin attached to a one-pool arena.
type Target struct {
	Config
	Plugin   *plugin.Plugin
	Mem      pool.Memory
	Geometry pool.Geometry
	Declared oracle.Declared
	// GeometryViolation is set when the plugin's declared bytes/token or
	// page bytes differ from the layout's: a stride violation before any
	// case runs.
	GeometryViolation *oracle.Violation
}

// ErrUnsupported is returned when a plugin lacks the layout or kernel asked for.
var ErrUnsupported = fmt.Errorf("unsupported by plugin")

// Open describes the plugin, checks its geometry, plans and fills the
// arena and attaches the plugin to it.
func Open(ctx context.Context, p *plugin.Plugin, dir *pool.Dir, cfg Config) (*Target, error) {
	t := &Target{Config: cfg, Plugin: p}
	if err := t.describe(ctx); err != nil {
		return nil, err
	}
	if err := t.plan(dir); err != nil {
		return nil, err
	}
	if err := t.attach(ctx); err != nil {
		t.Mem.Close()
		return nil, err
	}
	return t, nil
}

func (t *Target) describe(ctx context.Context) error {
	l := t.Layout
	d, err := t.Plugin.Describe(ctx, &kvpb.DescribeRequest{Variant: t.Variant, HeadDim: uint32(l.HeadDim), PageSize: uint32(l.PageSize)})
	if err != nil {
		return err
	}
	for _, g := range d.Layouts {
		if g.Layout != l.Name {
			continue
		}
		t.Declared = oracle.Declared{BytesPerToken: int(g.BytesPerToken), PageBytes: int(g.BytesPerPage)}
		t.GeometryViolation = geometryViolation(l, t.Declared)
		return nil
	}
	return fmt.Errorf("%w: %s does not store layout %s (it lists %v)", ErrUnsupported, t.Plugin.Name, l.Name, layoutNames(d))
}

func layoutNames(d *kvpb.DescribeResponse) []string {
	var out []string
	for _, g := range d.Layouts {
		out = append(out, g.Layout)
	}
	return out
}

func geometryViolation(l *layout.Layout, d oracle.Declared) *oracle.Violation {
	if d.BytesPerToken == l.BytesPerToken() && d.PageBytes == l.PageBytes() {
		return nil
	}
	return &oracle.Violation{Kind: oracle.Geometry, Row: oracle.NoRow,
		Detail: fmt.Sprintf("plugin declares %d B/token and %d B/page; layout %s (D=%d, P=%d) has %d B/token and %d B/page",
			d.BytesPerToken, d.PageBytes, l.Name, l.HeadDim, l.PageSize, l.BytesPerToken(), l.PageBytes())}
}

// staging holds rows, then loc, for the largest batch.
func (t *Target) stagingBytes() int {
	return t.MaxCapacity*t.Layout.RowBytes() + pool.Alignment + t.MaxCapacity*8
}

func (t *Target) locOffset() int {
	return t.Geometry.Staging.Off + (t.MaxCapacity*t.Layout.RowBytes()+pool.Alignment-1)/pool.Alignment*pool.Alignment
}

func (t *Target) plan(dir *pool.Dir) error {
	g, err := pool.Plan([]pool.Spec{{Name: "pool", Layout: t.Layout, Slots: t.Slots}}, t.stagingBytes())
	if err != nil {
		return err
	}
	mem, err := pool.NewSHM(dir, g.Size)
	if err != nil {
		return err
	}
	if err := mem.Fill(g.Regions[0].Span(), t.Seed); err != nil {
		mem.Close()
		return err
	}
	t.Geometry, t.Mem = g, mem
	return nil
}

// Region is the target's one pool.
func (t *Target) Region() pool.Region { return t.Geometry.Regions[0] }

func window(w pool.Window) *kvpb.Window {
	return &kvpb.Window{Offset: uint64(w.Off), Size: uint64(w.Len)}
}

func (t *Target) attach(ctx context.Context) error {
	r := t.Region()
	_, err := t.Plugin.Attach(ctx, &kvpb.AttachRequest{
		Arena: t.Mem.Desc(), Variant: t.Variant, Staging: window(t.Geometry.Staging),
		Pools: []*kvpb.PoolDesc{{
			Name:   r.Name,
			Layout: &kvpb.LayoutRef{Name: t.Layout.Name, HeadDim: uint32(t.Layout.HeadDim), PageSize: uint32(t.Layout.PageSize)},
			Slots:  uint64(r.Slots), Pool: window(r.Pool),
			GuardBefore: window(r.GuardBefore), GuardAfter: window(r.GuardAfter),
		}},
	})
	return err
}

// Close detaches the plugin and frees the arena; the plugin keeps running.
func (t *Target) Close(ctx context.Context) {
	t.Plugin.Detach(ctx)
	t.Mem.Close()
}

// Run executes one store and returns what it changed, leaving the pool as
// it found it.
func (t *Target) Run(ctx context.Context, c *workload.Store, rows [][]uint16) (oracle.Delta, error) {
	if c.Capacity() > t.MaxCapacity {
		return oracle.Delta{}, fmt.Errorf("case capacity %d exceeds the staging size %d", c.Capacity(), t.MaxCapacity)
	}
	if err := t.stage(c, rows); err != nil {
		return oracle.Delta{}, err
	}
	err := t.Plugin.Store(ctx, &kvpb.StoreRequest{
		Capacity: uint32(c.Capacity()), Valid: uint32(c.Valid), Padding: kvpb.Padding(c.Padding),
		RowsOffset: uint64(t.Geometry.Staging.Off), LocOffset: uint64(t.locOffset()), Graph: t.Graph,
	})
	d, cerr := oracle.Capture(t.Mem, t.Region())
	if cerr == nil {
		cerr = t.Mem.Reset(d.Windows)
	}
	if err != nil {
		return d, err
	}
	return d, cerr
}

func (t *Target) stage(c *workload.Store, rows [][]uint16) error {
	rb := t.Layout.RowBytes()
	buf := make([]byte, c.Capacity()*rb)
	for i, r := range rows[:c.Capacity()] {
		copy(buf[i*rb:], unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(r))), rb))
	}
	if err := t.Mem.WriteAt(buf, t.Geometry.Staging.Off); err != nil {
		return err
	}
	loc := make([]byte, 8*c.Capacity())
	for i, s := range c.Loc {
		binary.LittleEndian.PutUint64(loc[8*i:], uint64(s))
	}
	return t.Mem.WriteAt(loc, t.locOffset())
}
