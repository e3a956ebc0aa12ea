// Package target is what every kernel kind's target shares: a plugin
// attached to an arena, the geometry the plugin declares for a layout, and
// the attach request that describes the arena's pools.
//
// A plugin holds one attachment at a time. Several targets may share one
// plugin (a suite opens one per layout, a transfer run one per geometry),
// so a target attaches again before a call when another attached since.
package target

import (
	"context"
	"errors"
	"fmt"

	"github.com/kvharness/kvharness/harness/arena"
	"github.com/kvharness/kvharness/harness/layout"
	"github.com/kvharness/kvharness/harness/oracle"
	"github.com/kvharness/kvharness/harness/plugin"
	"github.com/kvharness/kvharness/harness/pool"
	"github.com/kvharness/kvharness/harness/protocol"
	"github.com/kvharness/kvharness/harness/protocol/kvpb"
	"github.com/kvharness/kvharness/harness/rundir"
)

// ErrUnsupported is returned when a plugin lacks the layout or kernel asked for.
var ErrUnsupported = errors.New("unsupported by plugin")

// Base is a plugin attached to an arena planned as Pools.
type Base struct {
	Plugin  *plugin.Plugin
	Arena   *arena.Arena
	Pools   pool.Geometry // the planned pools and staging
	Variant string
	// Resident, when set, is the most bytes the arena's pages will hold:
	// its pools reach far but are touched in windows (arena.Options);
	// Backed, the windows a device backs then.
	Resident int
	Backed   []pool.Window
}

// Mem is the memory of the arena's first region, where every pool of
// today's kinds lives.
func (b *Base) Mem() arena.Memory { return b.Arena.Mem() }

// Plan allocates the arena for g on backend, mapped as the plugin's last
// Describe said it maps arenas (every target describes the plugin first),
// and fills it: fill is called with the memory before anything is
// attached.
func (b *Base) Plan(dir *rundir.Dir, backend arena.Backend, g pool.Geometry, fill func(arena.Memory) error) error {
	mem, err := backend.New(dir, g.Size, arena.Options{FDArenas: b.Plugin.MapsFDArenas(), SparseArenas: b.Plugin.MapsSparseArenas(),
		Resident: b.Resident, Backed: b.Backed})
	if err != nil {
		return err
	}
	if err := fill(mem); err != nil {
		mem.Close()
		return err
	}
	b.Pools, b.Arena = g, arena.One(backend.Place().Space, mem)
	return nil
}

// FillRegions fills every pool of g, guards included, with the background
// of seed: the usual fill.
func FillRegions(g pool.Geometry, seed int64) func(arena.Memory) error {
	return func(mem arena.Memory) error {
		for _, r := range g.Regions {
			if err := mem.Fill(r.Span(), uint64(seed)); err != nil {
				return err
			}
		}
		return nil
	}
}

// Attach gives the plugin the arena.
func (b *Base) Attach(ctx context.Context) error {
	_, err := b.Plugin.Attach(ctx, b, Request(b.Arena, b.Pools, b.Variant))
	return err
}

// AttachOrFree is Attach as a target's Open ends with it: when the attach
// fails the arena is freed, so that a target that never opened holds no
// memory.
func (b *Base) AttachOrFree(ctx context.Context) error {
	if err := b.Attach(ctx); err != nil {
		b.Arena.Close()
		return err
	}
	return nil
}

// PlanAndAttach is how a target's Open ends: plan plans and fills the
// arena, then the plugin attaches to it (AttachOrFree).
func (b *Base) PlanAndAttach(ctx context.Context, plan func() error) error {
	if err := plan(); err != nil {
		return err
	}
	return b.AttachOrFree(ctx)
}

// Twice runs a case twice with run, as the kinds' Checks do: the first
// run is judged, the second must leave exactly what it did (determinism).
// Either run's error ends it.
func Twice[A, R any](ctx context.Context, run func(context.Context, A) (R, error), a A) (first, again R, err error) {
	if first, err = run(ctx, a); err != nil {
		return first, again, err
	}
	again, err = run(ctx, a)
	return first, again, err
}

// Ensure attaches again when another target of the same plugin attached
// since this one did.
func (b *Base) Ensure(ctx context.Context) error {
	if b.Plugin.AttachedTo(b) {
		return nil
	}
	return b.Attach(ctx)
}

// Close detaches the plugin if the arena is still its attachment, and
// frees the arena; the plugin keeps running. Detaching first matters on
// the GPU: a device allocation may be freed only once its importer has
// closed its mapping.
func (b *Base) Close(ctx context.Context) {
	if b.Plugin.AttachedTo(b) {
		b.Plugin.Detach(ctx)
	}
	if b.Arena != nil {
		b.Arena.Close()
	}
}

// Request describes an arena and its pools to a plugin: every region, and
// each window in the region its pool lives in.
func Request(a *arena.Arena, g pool.Geometry, variant string) *kvpb.AttachRequest {
	var descs []*kvpb.Arena
	for _, d := range a.Descs() {
		descs = append(descs, arenaDesc(d))
	}
	req := &kvpb.AttachRequest{Arena: descs[0], Variant: variant, Staging: window(g.Staging, 0)}
	if len(descs) > 1 {
		req.Regions = descs
	}
	for _, r := range g.Regions {
		l := r.Layout
		req.Pools = append(req.Pools, &kvpb.PoolDesc{
			Name:   r.Name,
			Layout: LayoutRef(l),
			Slots:  uint64(r.Slots), Pool: window(r.Pool, r.Mem),
			GuardBefore: window(r.GuardBefore, r.Mem), GuardAfter: window(r.GuardAfter, r.Mem),
			Buffer: bufferDesc(r.Buffer),
		})
	}
	return req
}

// LayoutRef names layout l on the wire: its name and dimensions.
func LayoutRef(l *layout.Layout) *kvpb.LayoutRef {
	ref := &kvpb.LayoutRef{Name: l.Name, HeadDim: uint32(l.HeadDim), PageSize: uint32(l.PageSize)}
	if h := l.NumHeads(); h > 1 {
		ref.Heads = uint32(h)
	}
	return ref
}

// arenaDesc is a region's description on the wire.
func arenaDesc(d protocol.ArenaDesc) *kvpb.Arena {
	a := &kvpb.Arena{Backend: kvpb.Backend(d.Backend), Pinned: d.Pinned, Path: d.Path, IpcHandle: d.IPCHandle,
		Device: int32(d.Device), Size: uint64(d.Size), FdSocket: d.FDSocket, MappedSize: uint64(d.MappedSize)}
	for _, w := range d.Pieces {
		a.Pieces = append(a.Pieces, &kvpb.Window{Offset: uint64(w.Off), Size: uint64(w.Len)})
	}
	return a
}

// bufferDesc is a pool's buffer on the wire; nil for a pool of no
// transfer.
func bufferDesc(b *pool.Buffer) *kvpb.PoolBuffer {
	if b == nil {
		return nil
	}
	side := map[string]kvpb.Side{"src": kvpb.Side_SIDE_SRC, "dst": kvpb.Side_SIDE_DST}[b.Side]
	return &kvpb.PoolBuffer{Side: side, Layer: uint32(b.Layer), Name: b.Name, Alloc: b.Alloc, Shift: uint32(b.Shift)}
}

func window(w pool.Window, region int) *kvpb.Window {
	return &kvpb.Window{Offset: uint64(w.Off), Size: uint64(w.Len), Region: uint32(region)}
}

// Declared asks the plugin what its code believes about layout l for a
// kernel and variant — geometry, fp8 recipe, slot width — and compares
// the geometry with the layout: a mismatch is a geometry violation every
// case carries; a missing kernel or layout is an ErrUnsupported error; a
// recipe this harness cannot read, or a slot width other than 32 or 64,
// is an error naming it.
func Declared(ctx context.Context, p *plugin.Plugin, kernel protocol.Kernel, variant string, l *layout.Layout) (oracle.Declared, *oracle.Violation, error) {
	d, err := p.Describe(ctx, QueryFor(variant, l))
	if err != nil {
		return oracle.Declared{}, nil, err
	}
	if err := Serves(p.Name, d, kernel); err != nil {
		return oracle.Declared{}, nil, err
	}
	g, err := Geometry(p.Name, d, kernel, l)
	if err != nil {
		return oracle.Declared{}, nil, err
	}
	dec := oracle.Declared{BytesPerToken: g.BytesPerToken, PageBytes: g.BytesPerPage, SlotBits: d.SlotBits, PadPolicy: g.PadPolicy}
	if g.Recipe != nil {
		r := *g.Recipe // the description is cached: each declaration gets its own
		dec.Recipe = &r
	}
	if g.RecipeErr != nil {
		return oracle.Declared{}, nil, fmt.Errorf("plugin %s, layout %s: %w", p.Name, l.Name, g.RecipeErr)
	}
	switch dec.SlotBits {
	case 0:
		dec.SlotBits = 64
	case 32, 64:
	default:
		return oracle.Declared{}, nil, fmt.Errorf("plugin %s declares %d-bit slots: want slot_bits 32 or 64 (0 is 64)", p.Name, dec.SlotBits)
	}
	return dec, GeometryViolation(l, dec), nil
}

// QueryFor is the Describe that asks for layout l's dimensions.
func QueryFor(variant string, l *layout.Layout) plugin.Query {
	q := plugin.Query{Variant: variant, HeadDim: l.HeadDim, PageSize: l.PageSize}
	if h := l.NumHeads(); h > 1 {
		q.Heads = h
	}
	return q
}

// Serves returns ErrUnsupported unless d lists the kernel.
func Serves(name string, d *plugin.Description, kernel protocol.Kernel) error {
	if !d.Serves(kernel) {
		return fmt.Errorf("%w: %s has no %s kernel (it serves %v)", ErrUnsupported, name, kernel, d.Kernels)
	}
	return nil
}

// Geometry is d's declaration for layout l, or ErrUnsupported.
func Geometry(name string, d *plugin.Description, kernel protocol.Kernel, l *layout.Layout) (plugin.Geometry, error) {
	for _, g := range d.Layouts {
		if g.Layout == l.Name {
			return g, nil
		}
	}
	var names []string
	for _, g := range d.Layouts {
		names = append(names, g.Layout)
	}
	return plugin.Geometry{}, fmt.Errorf("%w: %s has no layout %s for its %s kernel (it lists %v)", ErrUnsupported, name, l.Name, kernel, names)
}

// GeometryViolation is the violation every case carries when the plugin
// declares other bytes per token or page than layout l has; nil when they
// agree.
func GeometryViolation(l *layout.Layout, d oracle.Declared) *oracle.Violation {
	if d.BytesPerToken == l.BytesPerToken() && d.PageBytes == l.PageBytes() {
		return nil
	}
	return &oracle.Violation{Kind: oracle.Geometry, Row: oracle.NoRow,
		Detail: fmt.Sprintf("plugin declares %d B/token and %d B/page; layout %s (D=%d, P=%d) has %d B/token and %d B/page",
			d.BytesPerToken, d.PageBytes, l.Name, l.HeadDim, l.PageSize, l.BytesPerToken(), l.PageBytes())}
}

// Segment is a piece of staged input or output: its name, for messages,
// its arena offset and its bytes.
type Segment struct {
	Name string
	Off  int
	Data []byte
}
