package store

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/kvharness/kvharness/harness/arena"
	"github.com/kvharness/kvharness/harness/fuzzing"
	"github.com/kvharness/kvharness/harness/kind"
	"github.com/kvharness/kvharness/harness/layout"
	"github.com/kvharness/kvharness/harness/plugin"
	"github.com/kvharness/kvharness/harness/property"
	"github.com/kvharness/kvharness/harness/report"
)

// Kind is the store kernel kind: a batch of rows written into a pool's
// slots, padded as a CUDA-graph replay pads it.
var Kind = kind.Kind{
	Name:      Name,
	Layouts:   true,
	Graphs:    true,
	Check:     check,
	Replay:    replay,
	Decode:    kind.Decoder(Name, func() *Case { return &Case{} }),
	Fuzz:      fuzzing.Lane(FuzzTarget),
	Slots:     poolSlots,
	SlotsHelp: "stores 131072 on cpu and 1048576 on cuda",
	Validate:  validate,
	Bench:     &Bench,
	Warm:      warm,
}

// Default pools. A store's pool must be large enough that slot indices
// past 16 bits occur (a kernel that narrows loc to uint16 dies on the
// first case that draws one) and that its pages are many; 131,072 slots
// are three 32 MiB pools a set on the CPU, which checks them at nearly the
// speed of small ones (only the rows a case names are scanned; a full scan
// proves a window of cases). On the GPU, which scans at device speed, the
// default is a serving engine's pool: a million slots.
const (
	slotsCPU  = 1 << 17
	slotsCUDA = 1 << 20
)

func poolSlots(p arena.Place, _ int) int {
	if p.OnDevice() {
		return slotsCUDA
	}
	return slotsCPU
}

// validate refuses a capacity past a store batch's bound and a padding
// convention that is not one.
func validate(p kind.Params) error {
	if p.MaxCapacity < 1 || p.MaxCapacity > MaxCapacity {
		return fmt.Errorf("--max-capacity %d: want 1..%d", p.MaxCapacity, MaxCapacity)
	}
	if p.Addressing != "" {
		if _, err := ParseAddressing(p.Addressing); err != nil {
			return err
		}
	}
	if p.Padding != "all" {
		if pad, err := ParsePadding(p.Padding); err != nil || pad == PadTable {
			return fmt.Errorf("--padding %q: want none, count, sink, minus1 or all", p.Padding)
		}
	}
	return nil
}

// Suite is the store properties over layouts × paddings: one target per
// layout, shared by its paddings' rows.
func Suite(s *kind.Session, p kind.Params, paddings []Padding) *property.Suite[*Target, *Case, *Result] {
	var cells []Cell
	for _, l := range p.Layouts {
		for _, pad := range paddings {
			cells = append(cells, Cell{Layout: l, Padding: pad})
		}
	}
	return CellSuite(s, p, cells)
}

// Cell is one row of a store suite: a layout, at the shape the row
// checks it at, and a padding convention.
type Cell struct {
	Layout  *layout.Layout
	Padding Padding
}

// CellSuite is the store properties over cells, a row each; consecutive
// cells of one layout and shape share a target.
func CellSuite(s *kind.Session, p kind.Params, cells []Cell) *property.Suite[*Target, *Case, *Result] {
	return cellSuite(s, p, cells, false)
}

// cellSuite is CellSuite, the pools scaled (RowSlots) when asked.
func cellSuite(s *kind.Session, p kind.Params, cells []Cell, scaled bool) *property.Suite[*Target, *Case, *Result] {
	suite := kind.NewSuite[*Target, *Case, *Result](s, p)
	suite.Stress = p.Stress
	sets := AutoSets
	if p.Stress > 1 {
		sets = 0 // a stressed case runs on its processes at once, not ahead (property.Suite.Stress)
	}
	for _, c := range cells {
		l, pad := c.Layout, c.Padding
		cfg := cellConfig(p, c, scaled, sets)
		key := fmt.Sprintf("%s/%s", l.Name, kind.ShapeOf(l)) // a row's target: its layout at its shape
		suite.Rows = append(suite.Rows, property.Row[*Target, *Case, *Result]{Layout: l, Label: pad.String(), Key: key,
			Cost: rowCost(l),
			Open: func(ctx context.Context, pl *plugin.Plugin) (*Target, error) { return Open(ctx, pl, s.Dir, cfg) },
			System: func(t *Target) property.System[*Case, *Result] {
				sys := NewSystem(t, pad, p.MaxCapacity)
				sys.Budget = p.Cases
				return sys
			}})
	}
	return suite
}

// cellConfig is the target configuration of cell c's row, keeping sets
// pool sets to check ahead on.
func cellConfig(p kind.Params, c Cell, scaled bool, sets int) Config {
	return Config{Variant: p.Variant, Layout: c.Layout, Slots: RowSlots(c.Layout, p.Slots, p.Far, scaled), MaxCapacity: p.MaxCapacity,
		Seed: p.Seed, Backend: p.Backend, Graph: p.Graph, Value: p.Value, Sets: sets, Addressing: addressingFor(c.Padding)}
}

// rowCost is roughly what a case of layout l costs, for the order rows
// run in as jobs (property.Row.Cost): a window a piece of a slot's
// footprint (vLLM's paged caches spread a token over hundreds) and the
// elements of its input row, each drawn, encoded and stored.
func rowCost(l *layout.Layout) float64 { return float64(l.NumPieces()) + float64(l.RowElems())/32 }

// cells are a check run's rows: each layout under each padding, at the
// shape drawn for the padding's turn (its place in Paddings), so a row's
// shape does not depend on which other paddings the run checks.
func cells(ctx context.Context, s *kind.Session, p kind.Params, sh *kind.Shapes, paddings []Padding) ([]Cell, error) {
	var out []Cell
	for _, l := range p.Layouts {
		for _, pad := range paddings {
			rl, err := sh.Row(ctx, s, p, l, max(slices.Index(Paddings, pad), 0))
			if err != nil {
				return nil, err
			}
			out = append(out, Cell{Layout: rl, Padding: pad})
		}
	}
	return out, nil
}

// plan is what a check of p runs: its rows (cells), at the settings the
// plugin and backend leave (p), and what its header says of them.
type plan struct {
	p      kind.Params
	sh     *kind.Shapes
	cells  []Cell
	scaled bool // the default pools cut to what a GPU holds whole
	eager  bool // page-table stores, run eagerly though --graph asked
}

// planCheck decides a check's rows: the paddings and addressing, the far
// or scaled pools, and each row's drawn shape.
func planCheck(ctx context.Context, s *kind.Session, p kind.Params) (plan, error) {
	paddings := Paddings
	if p.Padding != "" && p.Padding != "all" {
		pad, err := ParsePadding(p.Padding)
		if err != nil {
			return plan{}, err
		}
		paddings = []Padding{pad}
	}
	addressing, paddings, err := addressingOf(ctx, s, p, paddings) // pagetable.go
	if err != nil {
		return plan{}, err
	}
	eager := addressing == ByPageTable && p.Graph
	if eager {
		p.Graph = false // a captured graph would replay its first call's page table
	}
	// Far pools live in sparse memory (reach.go): host shared memory in a
	// tmpfs run directory, or a GPU's for a plugin that maps sparse
	// arenas. Off tmpfs the pools are the flags' as before; on a GPU
	// whose plugin maps arenas whole the default pool is cut by bytes.
	dev := p.Place().OnDevice()
	sparse := arena.Sparse(p.Backend, arena.Options{FDArenas: s.Desc.CUDAFDArenas, SparseArenas: s.Desc.CUDASparseArenas})
	scaled := p.Far && dev && !sparse
	p.Far = p.Far && sparse && (dev || sparseDir(s.Dir))
	sh, err := p.Spaces(ctx, s, p.Layouts)
	if err != nil {
		return plan{}, err
	}
	cs, err := cells(ctx, s, p, sh, paddings)
	if err != nil {
		return plan{}, err
	}
	return plan{p: p, sh: sh, cells: cs, scaled: scaled, eager: eager}, nil
}

func check(ctx context.Context, s *kind.Session, p kind.Params) (*report.Run, error) {
	pl, err := planCheck(ctx, s, p)
	if err != nil {
		return nil, err
	}
	p, sh, cs := pl.p, pl.sh, pl.cells
	h := p.Header(s)
	h.Scaled = pl.scaled
	h.JSON = report.Object{{Key: "slots", Value: p.Slots}, {Key: "geometry", Value: sh.Covered(), OmitEmpty: true}}
	values, err := valueCoverage(ctx, s, p, cs) // coverage.go
	if err != nil {
		return nil, err
	}
	h.Coverage, h.Shapes = append(sh.Lines(), values...), sh.Drawn()
	if p.Value == layout.Exact { // the default, by the declared recipe, goes unsaid
		h.About = "fp8 values judged bit-exact"
		h.JSON = append(h.JSON, report.Field{Key: "value", Value: p.Value.String()})
	}
	if pl.eager {
		h.About = strings.TrimPrefix(h.About+"; page-table stores run eagerly, not from CUDA graphs (a graph would replay its first call's page table)", "; ")
	}
	return kind.RunSuite(ctx, cellSuite(s, p, cs, pl.scaled), Schema, h)
}

// warm opens, and closes, the target of the first row a check of p opens
// (Kind.Warm): the plugin's attach sees that row's layout, shape and pool,
// so it compiles the kernels the row will launch. It keeps no pool sets to
// check ahead on: they are more pools of the same layout and size, which
// the attach compiles nothing new for, and a target started ahead of its
// check should hold no more memory than it needs.
func warm(ctx context.Context, s *kind.Session, p kind.Params) error {
	if !p.Shard.IsWhole() || p.Jobs > 1 && !p.StopAtFirst {
		return nil // rows run as jobs, or a shard's: the first opened may not be cells[0]
	}
	pl, err := planCheck(ctx, s, p)
	if err != nil || len(pl.cells) == 0 {
		return err
	}
	t, err := Open(ctx, s.Plugin, s.Dir, cellConfig(pl.p, pl.cells[0], pl.scaled, 0))
	if err != nil {
		return err
	}
	t.Close(ctx)
	return nil
}

func replay(ctx context.Context, s *kind.Session, r *report.Repro, l *layout.Layout, b arena.Backend) (*report.Failure, error) {
	c := r.Case.(*Case)
	mode, err := layout.ParseMode(r.Value)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", report.ErrBadRepro, err)
	}
	t, err := Open(ctx, s.Plugin, s.Dir, Config{Variant: r.Variant, Layout: l, Slots: r.Slots, MaxCapacity: c.Capacity(),
		Seed: r.BackgroundSeed, Value: mode, Backend: b, Graph: r.Graph, Addressing: addressingFor(c.Padding)})
	if err != nil {
		return nil, err
	}
	defer t.Close(ctx)
	h := s.ReplayHeader(r, b)
	h.Slots = r.Slots
	if mode == layout.Exact {
		h.About = "fp8 values judged bit-exact"
	}
	return kind.Replay(ctx, &System{Target: t}, Schema, h, r, l, c, c.Padding.String())
}
