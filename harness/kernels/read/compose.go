package read

import (
	"context"
	"fmt"
	"slices"

	"github.com/kvharness/kvharness/harness/arena"
	"github.com/kvharness/kvharness/harness/layout"
	"github.com/kvharness/kvharness/harness/oracle"
	"github.com/kvharness/kvharness/harness/plugin"
	"github.com/kvharness/kvharness/harness/pool"
	"github.com/kvharness/kvharness/harness/rundir"
	"github.com/kvharness/kvharness/harness/target"
)

// Composition: a store kernel writes a cache and a read kernel reads it,
// on one pool, as an engine wires them. Each may pass alone and the pair
// still disagree: the writer lays a page out block-planar and the reader
// token-interleaved (the same bytes a page), or the writer stores
// amax/448 and the reader believes its scales are powers of two. A
// composed case draws keys as a read case does, has the writer store
// them (under the row's padding), judges the writer's bytes by its
// layout and recipe, then asks the reader what it sees: one request per
// element, a one-hot query over every key, so each returned score is
// one element of one key as the reader decodes it. Every element must be
// what the writer's bytes mean (within the read tolerance); where not,
// the finding names both kernels, the field the reader misreads (the
// codes, or the group's scale when a whole group is off by one factor)
// and the decoded values on both sides.

// Side is one kernel of a composed check: its plugin (a process of its
// own), how the user named it, its variant and the layout its code uses
// for the cache (with its declared recipe, see Pair).
type Side struct {
	Plugin  *plugin.Plugin
	Arg     string
	Variant string
	Layout  *layout.Layout
}

// String names the kernel as reports do: "gostore" or
// "gostore (variant pow2-scale-read)".
func (s Side) String() string {
	if s.Variant == "" {
		return s.Arg
	}
	return fmt.Sprintf("%s (variant %s)", s.Arg, s.Variant)
}

// ComposeConfig is a composed check's settings.
type ComposeConfig struct {
	Writer, Reader Side
	Slots          int
	Paddings       []Padding
	Cases          int   // passing cases wanted per padding
	Seed           int64 // the first case's seed (see CaseSeeds)
	Backend        arena.Backend
	Mode           layout.Mode // how the writer's bytes are judged
}

// Compose checks that the reader sees what the writer was given, one
// row per padding. Errors are setup errors (a layout either side does
// not declare, an arena that does not fit); what the kernels do wrong is
// in the rows.
func Compose(ctx context.Context, dir *rundir.Dir, cfg ComposeConfig) (*Composed, error) {
	if cfg.Backend == nil {
		return nil, arena.ErrNoBackend
	}
	p, err := openPair(ctx, dir, cfg)
	if err != nil {
		return nil, err
	}
	defer p.close(ctx)
	out := &Composed{Writer: p.writer, Reader: p.reader, WriterRecipe: p.writerRecipe, ReaderRecipe: p.readerRecipe, Slots: cfg.Slots}
	for _, pad := range cfg.Paddings {
		row, err := p.row(ctx, pad, cfg)
		if err != nil {
			return out, err
		}
		out.Rows = append(out.Rows, row)
	}
	return out, nil
}

// pair is a writer and a reader attached to one arena.
type pair struct {
	writer, reader             Side
	writerRecipe, readerRecipe string // as declared, for the report
	writerBits                 int    // the writer's slot width
	w, r                       target.Base
	staging                    composeStaging
	seed                       int64
}

// openPair asks each plugin what it believes about its layout, plans one
// pool of the writer's layout, and attaches both plugins to it: the
// reader told the pool is of its own layout (the same bytes a page).
func openPair(ctx context.Context, dir *rundir.Dir, cfg ComposeConfig) (*pair, error) {
	p := &pair{writer: cfg.Writer, reader: cfg.Reader, seed: cfg.Seed}
	wd, err := declaredSide(ctx, &p.writer, "store")
	if err != nil {
		return nil, err
	}
	if _, err := declaredSide(ctx, &p.reader, string(Name)); err != nil {
		return nil, err
	}
	p.writerBits, p.writerRecipe, p.readerRecipe = wd.SlotBits, recipeLine(p.writer.Layout), recipeLine(p.reader.Layout)
	if err := SamePool(p.writer.Layout, p.reader.Layout); err != nil {
		return nil, err
	}
	p.staging = planComposeStaging(p.writer.Layout, p.writerBits)
	g, err := pool.Plan([]pool.Spec{{Name: "cache", Layout: p.writer.Layout, Slots: cfg.Slots}}, p.staging.size)
	if err != nil {
		return nil, err
	}
	p.staging.base = g.Staging.Off
	p.w = target.Base{Plugin: p.writer.Plugin, Variant: p.writer.Variant}
	fill := func(mem arena.Memory) error {
		for _, w := range []pool.Window{g.Regions[0].Span(), g.Staging} {
			if err := mem.Fill(w, uint64(cfg.Seed)); err != nil {
				return err
			}
		}
		return nil
	}
	if err := p.w.PlanAndAttach(ctx, func() error { return p.w.Plan(dir, cfg.Backend, g, fill) }); err != nil {
		return nil, err
	}
	rg := g
	rg.Regions = []pool.Region{g.Regions[0]}
	rg.Regions[0].Layout = p.reader.Layout
	p.r = target.Base{Plugin: p.reader.Plugin, Variant: p.reader.Variant, Arena: p.w.Arena, Pools: rg}
	if err := p.r.Attach(ctx); err != nil {
		p.w.Close(ctx)
		return nil, err
	}
	return p, nil
}

// declaredSide asks a side's plugin about its layout for kernel k: a
// geometry other than the layout's is an error (check the kernel alone
// first), a recipe becomes the side's layout's.
func declaredSide(ctx context.Context, s *Side, k string) (oracle.Declared, error) {
	d, gv, err := target.Declared(ctx, s.Plugin, kernelName(k), s.Variant, s.Layout)
	if err != nil {
		return d, err
	}
	if gv != nil {
		return d, fmt.Errorf("%s: %s (check it alone first: kvharness check --plugin %s --kernel %s)", s, gv.Detail, s.Arg, k)
	}
	s.Layout, err = ReaderLayout(s.Layout, d, s.Plugin.Name)
	return d, err
}

// SamePool refuses a writer and reader layout that an engine could not
// hand one tensor: other bytes a token or a page, or a layout the read
// kind cannot read (several heads or tensors a token, scales passed in).
func SamePool(w, r *layout.Layout) error {
	for _, l := range []*layout.Layout{w, r} {
		if l.RowElems() != l.HeadDim || len(l.ScaleInputs()) > 0 || slices.Contains(layout.ModelNames(), l.Name) {
			return fmt.Errorf("layout %s is an engine cache (several heads or tensors a token, placed fields, or scales passed in): a composed check reads the layouts of one record a slot, as the read kind does (bf16, fp8-paged, fp8-rows, fp8-ds-mla, dsv4-main, or a file of that form)", l.Name)
		}
	}
	if w.HeadDim != r.HeadDim || w.PageSize != r.PageSize || w.BytesPerToken() != r.BytesPerToken() || w.PageBytes() != r.PageBytes() {
		return fmt.Errorf("the writer's layout %s (D=%d, P=%d, %d B/token, %d B/page) and the reader's %s (D=%d, P=%d, %d B/token, %d B/page) are not one cache: give the reader a layout of the same bytes a page",
			w.Name, w.HeadDim, w.PageSize, w.BytesPerToken(), w.PageBytes(), r.Name, r.HeadDim, r.PageSize, r.BytesPerToken(), r.PageBytes())
	}
	return nil
}

func (p *pair) close(ctx context.Context) {
	if p.r.Plugin.AttachedTo(&p.r) {
		p.r.Plugin.Detach(ctx)
	}
	p.w.Close(ctx) // frees the arena both mapped
}

// ensure attaches a side again if its plugin attached elsewhere since.
func ensure(ctx context.Context, b *target.Base) error {
	if b.Plugin.AttachedTo(b) {
		return nil
	}
	return b.Attach(ctx)
}

// restore puts the pool and staging back to the background, so that a
// case finds no earlier case's bytes.
func (p *pair) restore() error {
	mem := p.w.Mem()
	var ws []pool.Window
	for _, w := range []pool.Window{p.w.Pools.Regions[0].Span(), p.w.Pools.Staging} {
		ch, err := mem.Changed(w)
		if err != nil {
			return err
		}
		ws = append(ws, ch...)
	}
	return mem.Reset(ws)
}
