package python

import (
	"cmp"
	"context"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/kvharness/kvharness/harness/arena"
	"github.com/kvharness/kvharness/harness/kernels/store"
	"github.com/kvharness/kvharness/harness/kind"
	"github.com/kvharness/kvharness/harness/layout"
	"github.com/kvharness/kvharness/harness/oracle"
	"github.com/kvharness/kvharness/harness/plugin"
	"github.com/kvharness/kvharness/harness/pool"
	"github.com/kvharness/kvharness/harness/protocol/kvpb"
	"github.com/kvharness/kvharness/harness/protocol/wire"
	"github.com/kvharness/kvharness/harness/workload"
	"github.com/kvharness/kvharness/internal/testtier"
)

// example is one of the example stores a kernel author copies.
type example struct {
	dir      string
	layout   string
	headDim  int
	scale    kvpb.ScaleRule
	ulps     uint32 // declared scale_ulps; 0: unset
	slotBits uint32
	// quantized are the fields whose bytes the eps decides: where a
	// store's undeclared eps shows.
	quantized []string
}

var examples = []example{
	{"indexerstore", "fp8-paged", 128, kvpb.ScaleRule_SCALE_RULE_F32, 2, 64, []string{"scale"}},
	{"dsv4store", "dsv4-main", 512, kvpb.ScaleRule_SCALE_RULE_UE8M0, 0, 32, []string{"scales"}},
}

func (e example) manifest() string { return filepath.Join(e.dir, "kvharness-plugin.json") }

func (e example) layoutOf(t testing.TB) *layout.Layout {
	t.Helper()
	l, err := layout.Builtin(e.layout, e.headDim, 64)
	noErr(t, err)
	return l
}

// describe asks p for e's layout, head dimension and 64-token pages under
// variant.
func (e example) describe(t testing.TB, p *plugin.Plugin, variant string) *plugin.Description {
	t.Helper()
	d, err := p.Describe(context.Background(), plugin.Query{Variant: variant, HeadDim: e.headDim, PageSize: 64})
	noErr(t, err)
	return d
}

// The examples declare their recipe (eps 1e-8, x * (1/scale)) and slot
// width where the harness reads them; undeclared-eps declares none, and
// default-recipe is a control.
func TestExampleDeclarations(t *testing.T) {
	slowPython(t)
	for _, e := range examples {
		p := start(t, runDir(t), e.manifest(), "")
		for _, v := range []string{"", "undeclared-eps", "default-recipe"} {
			d := e.describe(t, p, v)
			if len(d.Layouts) != 1 || d.Layouts[0].Layout != e.layout || d.SlotBits != int(e.slotBits) || !d.CUDAFDArenas {
				t.Fatalf("%s %q: %v", e.dir, v, d)
			}
			l := e.layoutOf(t)
			if g := d.Layouts[0]; g.BytesPerToken != l.BytesPerToken() || g.BytesPerPage != l.PageBytes() {
				t.Errorf("%s: declares %d B/token, %d B/page; the layout has %d, %d", e.dir, g.BytesPerToken, g.BytesPerPage,
					l.BytesPerToken(), l.PageBytes())
			}
			r := wire.RecipeToProto(d.Layouts[0].Recipe)
			if v != "" {
				if r != nil {
					t.Errorf("%s %q declares %v; want the default recipe", e.dir, v, r)
				}
				continue
			}
			if r.GetScale() != e.scale || r.Eps == nil || *r.Eps != 1e-8 || r.Quantize != kvpb.Quantize_QUANTIZE_RECIPROCAL ||
				r.Saturate != nil || (r.ScaleUlps == nil) != (e.ulps == 0) || r.GetScaleUlps() != e.ulps {
				t.Errorf("%s declares %v; want %v, eps 1e-8, reciprocal, scale_ulps %d (0: unset), saturate unset", e.dir, r, e.scale, e.ulps)
			}
		}
		vs := e.describe(t, p, "").Variants
		if i := slices.IndexFunc(vs, func(v plugin.Variant) bool { return v.Name == "default-recipe" }); i < 0 || !vs[i].Correct {
			t.Errorf("%s: default-recipe is not a control", e.dir)
		}
	}
}

// The examples as shipped, judged by the recipe they declare (eps 1e-8,
// x * (1/scale); dsv4store's pad byte left as it was, its slots int32),
// and (in the full suite) the default-recipe controls, which compute
// exactly the harness's reference encoding: every property holds under
// every padding, checked on the CPU through the numpy twins.
func TestExamplesPass(t *testing.T) {
	slowPython(t)
	cases := rowCases(60, 20)
	for _, e := range examples {
		for _, variant := range []string{"", "default-recipe"} {
			t.Run(e.dir+"/"+cmp.Or(variant, "shipped"), func(t *testing.T) {
				if variant != "" {
					testtier.FullOnly(t, "the default-recipe control's run (the fast loop runs the shipped store through the same numpy path, "+
						"TestExampleDeclarations checks the control's declaration, harness/kernels/store's TestCorrectPluginsPass the default recipe)")
				}
				dir := runDir(t)
				p := start(t, dir, e.manifest(), variant)
				s := store.Suite(&kind.Session{Plugin: p, Dir: dir}, kind.Params{Variant: variant, Layouts: []*layout.Layout{e.layoutOf(t)},
					Cases: cases, Seed: 1, Setup: kind.Setup{Slots: 1024, MaxCapacity: 64, Backend: arena.SHM{}}}, store.Paddings)
				vs, err := s.Run(context.Background())
				if err != nil {
					t.Fatalf("%s %q: %v", e.dir, variant, err)
				}
				for _, v := range vs {
					if !v.Outcome.Passed() || v.Outcome.Cases != cases {
						t.Errorf("%s %q %s: %d cases, failure %+v", e.dir, variant, v.Label, v.Outcome.Cases, v.Outcome.Failure)
					}
				}
			})
		}
	}
}

func rowsCase(pad store.Padding, valid int, kinds []workload.RowKind, loc ...int64) *store.Case {
	c := &store.Case{Padding: pad, Valid: valid, Loc: loc}
	for i := range loc {
		c.Rows = append(c.Rows, workload.Row{Kind: kinds[i%len(kinds)], Seed: uint64(i + 11)})
	}
	return c
}

// The examples' arithmetic without its declaration (undeclared-eps) is
// judged by the default recipe, eps 1e-4: on cases of normal, tiny and
// zero rows every violation is a scale-rule finding of a valid row's
// zero or tiny group, naming eps 1e-8 and how to declare it; the same
// cases pass as shipped, eps declared.
func TestExampleUndeclaredEpsIsNamed(t *testing.T) {
	slowPython(t)
	kinds := []workload.RowKind{workload.RowNormal, workload.RowTiny, workload.RowZero, workload.RowOutlier}
	cases := []*store.Case{
		rowsCase(store.PadCount, 6, kinds, 1, 63, 64, 200, 513, 1023, 7, 8),
		rowsCase(store.PadMinus1, 3, []workload.RowKind{workload.RowZero}, 5, 6, 700, -1),
	}
	for _, e := range examples {
		for _, variant := range []string{"", "undeclared-eps"} {
			dir := runDir(t)
			p := start(t, dir, e.manifest(), variant)
			tg, err := store.Open(context.Background(), p, dir, store.Config{Backend: arena.SHM{}, Variant: variant, Layout: e.layoutOf(t), Slots: 1024,
				MaxCapacity: 64, Seed: 1})
			noErr(t, err)
			for _, c := range cases {
				res, err := tg.Check(context.Background(), c)
				noErr(t, err)
				if variant == "" && res.Failed() {
					t.Errorf("%s as shipped, %s: %v", e.dir, c, res.Violations)
				}
				if variant == "undeclared-eps" && !res.Has(oracle.Value) {
					t.Errorf("%s undeclared-eps, %s: zero and tiny rows stored with eps 1e-8 pass as eps 1e-4", e.dir, c)
				}
				for _, v := range res.Violations {
					k := c.Rows[max(v.Row, 0)].Kind
					if v.Kind != oracle.Value || !slices.Contains(e.quantized, v.Field) || v.Row < 0 || v.Row >= c.Valid ||
						(k != workload.RowZero && k != workload.RowTiny) ||
						!strings.Contains(v.Detail, "scale rule") || !strings.Contains(v.Detail, "the bytes match eps 1e-8") {
						t.Errorf("%s %q: %v; want scale-rule violations of zero and tiny rows naming eps 1e-8", e.dir, variant, v)
					}
				}
				t.Logf("%s %q %s: %d violations", e.dir, variant, c.Padding, len(res.Violations))
			}
			tg.Close(context.Background())
		}
	}
}

// On the shared-memory backend a store staged by a harness that knows no
// slot_bits (int64) reaches dsv4store, which declares int32 slots, as
// int32: the pool gets the same bytes as from the control run on int64.
func TestSlotWidthConversion(t *testing.T) {
	slowPython(t)
	e := examples[1]
	dir := runDir(t)
	p := start(t, dir, e.manifest(), "default-recipe")
	l := e.layoutOf(t)
	g, mem := sharedPools(t, dir, []pool.Spec{{Name: "case", Layout: l, Slots: 256}}, 8*l.RowBytes()+64)
	attachShared(t, p, mem, g, "default-recipe")
	st := g.Staging.Off
	if err := mem.Fill(pool.Window{Off: st, Len: 8 * l.RowBytes()}, 5); err != nil {
		t.Fatal(err)
	}
	// Finite rows: clear each element's top exponent bit.
	rows := make([]byte, 8*l.RowBytes())
	mem.ReadAt(rows, st)
	for i := 1; i < len(rows); i += 2 {
		rows[i] &= 0x3f
	}
	mem.WriteAt(rows, st)
	snapshot := func() []byte {
		b := make([]byte, g.Regions[0].Pool.Len)
		mem.ReadAt(b, g.Regions[0].Pool.Off)
		return b
	}
	before := snapshot()
	locOff := st + 8*l.RowBytes()
	putInt64s(t, mem, locOff, 3, 64, 65, 255)
	req := &kvpb.StoreRequest{Capacity: 4, Valid: 4, RowsOffset: uint64(st), LocOffset: uint64(locOff)}
	if _, err := store.StoreBatch(context.Background(), p, []*kvpb.StoreRequest{req}); err != nil {
		t.Fatal(err)
	}
	wide := snapshot()
	mem.WriteAt(before, g.Regions[0].Pool.Off)
	b := make([]byte, 16)
	for i, s := range []uint32{3, 64, 65, 255} {
		b[4*i], b[4*i+1], b[4*i+2], b[4*i+3] = byte(s), byte(s>>8), byte(s>>16), byte(s>>24)
	}
	mem.WriteAt(b, locOff)
	req.SlotBits = 32
	if _, err := store.StoreBatch(context.Background(), p, []*kvpb.StoreRequest{req}); err != nil {
		t.Fatal(err)
	}
	if narrow := snapshot(); string(narrow) != string(wide) || string(wide) == string(before) {
		t.Errorf("int32 and int64 staging stored different bytes (or none)")
	}
}
