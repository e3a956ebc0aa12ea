package kernel

import (
	"context"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/kvharness/kvharness/harness/layout"
	"github.com/kvharness/kvharness/harness/sdk"
	"github.com/kvharness/kvharness/harness/sdk/store"
	"github.com/kvharness/kvharness/harness/workload"
)

// rig is one pool of a layout in an arena filled with a background, the
// rows stored into it, and the harness layout that judges them.
type rig struct {
	l     *layout.Layout
	pool  sdk.Pool
	arena []byte
	rows  [][]uint16
	slots []int64
}

const background = 0xab

func newRig(t *testing.T, name string, rows [][]uint16) *rig {
	t.Helper()
	d := len(rows[0])
	l, err := layout.Builtin(name, d, 64)
	if err != nil {
		t.Fatal(err)
	}
	slots := 4 * 64
	guard := l.PageBytes()
	r := &rig{l: l, rows: rows, arena: make([]byte, guard+l.PoolBytes(slots)+guard),
		pool: sdk.Pool{Name: name, Slots: slots, Base: guard, Bytes: l.PoolBytes(slots),
			Layout: sdk.Layout{Name: name, HeadDim: d, PageSize: 64}}}
	for i := range r.arena {
		r.arena[i] = background
	}
	perm := rand.New(rand.NewPCG(uint64(len(rows)), 3)).Perm(slots)
	for i := range rows {
		r.slots = append(r.slots, int64(perm[i]))
	}
	return r
}

// store runs the CPU kernel of variant over every row.
func (r *rig) store(t *testing.T, variant string) { r.storeN(t, variant, len(r.rows)) }

// storeN runs it with the rows past n as padding.
func (r *rig) storeN(t *testing.T, variant string, n int) {
	t.Helper()
	d := r.pool.Layout.HeadDim
	flat := make([]uint16, 0, len(r.rows)*d)
	for _, row := range r.rows {
		flat = append(flat, row...)
	}
	c := &store.Call{Variant: variant, Pool: r.pool, Arena: r.arena, Capacity: len(r.rows), Valid: n,
		Rows: flat, Loc: r.slots, SlotBits: 64}
	if err := Plugin.Kernel.(store.Storer).Store(context.Background(), c); err != nil {
		t.Fatal(err)
	}
}

// records is what row i's slot holds, one record per plane.
func (r *rig) records(i int) [][]byte {
	var out [][]byte
	for _, sp := range r.l.Footprint(r.slots[i]) {
		out = append(out, r.arena[r.pool.Base+sp.Off:r.pool.Base+sp.End()])
	}
	return out
}

// judge judges every row under the variant's declared recipe.
func (r *rig) judge(t *testing.T, variant string) []layout.Finding {
	t.Helper()
	l, err := r.l.WithRecipe(build(variant).recipe)
	if err != nil {
		t.Fatal(err)
	}
	var out []layout.Finding
	for i, row := range r.rows {
		out = append(out, l.Judge(row, r.records(i), layout.ByRecipe)...)
	}
	return out
}

// testRows draws rows with the harness's generator (workload.Row): zero,
// N(0,1) times a power of two, tiny (the floor decides) and outlier rows,
// in turn, each from its own seed.
func testRows(n, d int, seed uint64) [][]uint16 {
	kinds := []workload.RowKind{workload.RowZero, workload.RowNormal, workload.RowTiny, workload.RowOutlier}
	rows := make([][]uint16, n)
	for i := range rows {
		rows[i] = workload.Row{Kind: kinds[i%len(kinds)], Seed: seed<<32 | uint64(i)}.Data(d)
	}
	return rows
}

func dims(name string) int {
	if name == "dsv4-main" {
		return 512
	}
	return 128
}

// TestControlsPass: the shipped kernel (declaring eps 1e-8 and x*(1/s)),
// PyTorch's arithmetic (declaring nothing) and the 32-bit build pass the
// harness's judgement on every layout, and dsv4-main's pad byte keeps the
// background it had.
func TestControlsPass(t *testing.T) {
	for _, variant := range []string{"", "torch", "int32-slots"} {
		for _, name := range layouts {
			r := newRig(t, name, testRows(200, dims(name), 7))
			r.store(t, variant)
			if fs := r.judge(t, variant); len(fs) > 0 {
				t.Errorf("%q on %s: %d findings, first: %s", variant, name, len(fs), fs[0])
			}
			if name == "dsv4-main" {
				for i := range r.rows {
					if pad := r.records(i)[1][7]; pad != background {
						t.Fatalf("%q: row %d's pad byte is %#02x, the kernel wrote it", variant, i, pad)
					}
				}
			}
		}
	}
}

// TestTorchScaleIsNotIEEE: the torch control really is other arithmetic:
// some of its scales are 1 ulp from amax/448, which exact judgement
// rejects.
func TestTorchScaleIsNotIEEE(t *testing.T) {
	r := newRig(t, "fp8-rows", testRows(200, 128, 8))
	r.store(t, "torch")
	exact := 0
	for i, row := range r.rows {
		if len(r.l.Judge(row, r.records(i), layout.Exact)) > 0 {
			exact++
		}
	}
	if exact == 0 {
		t.Error("every torch scale equals amax/448: the control does not test the scale tolerance")
	}
	t.Logf("%d of %d rows fail exact judgement, none the default", exact, len(r.rows))
}

// TestMutantsDie: every mutant fails the judgement under its own
// declaration, by the rule its bug breaks, on the layout that shows it.
func TestMutantsDie(t *testing.T) {
	for _, tc := range []struct {
		variant, layout string
		rule            layout.Rule
		says            string
	}{
		{"eps-undeclared", "fp8-paged", layout.RuleScale, "the bytes match eps 1e-8"},
		{"eps-undeclared", "dsv4-main", layout.RuleScale, "the bytes match eps 1e-8"},
		{"ties-away", "dsv4-main", layout.RuleCode, "1 code off"},
		{"scale-partial-row", "fp8-rows", layout.RuleScale, "ulps from the recipe's"},
		{"scale-partial-row", "dsv4-main", layout.RuleScale, "power"},
		{"bf16-quotient", "fp8-paged", layout.RuleCode, "codes are not the rounding of x/s"},
		{"ue8m0-round-down", "dsv4-main", layout.RuleScale, "1 power of two from the recipe's"},
	} {
		r := newRig(t, tc.layout, testRows(64, dims(tc.layout), 9))
		r.store(t, tc.variant)
		fs := r.judge(t, tc.variant)
		var hit *layout.Finding
		for i := range fs {
			if fs[i].Rule == tc.rule {
				hit = &fs[i]
				break
			}
		}
		if hit == nil || !strings.Contains(hit.String(), tc.says) {
			t.Errorf("%s on %s: want a %s finding saying %q; got %d findings: %s", tc.variant, tc.layout, tc.rule, tc.says, len(fs), layout.Summary(fs))
		}
	}
}

// TestTiesAwayOnFloatScales: under float32 scales an exact tie is judged
// strictly only when the scale is a power of two, so ties away from zero
// shows on a row whose max |x| makes one: max |x| = 448 gives scale 1.
func TestTiesAwayOnFloatScales(t *testing.T) {
	row := make([]uint16, 128)
	row[0] = layout.Float32ToBF16(448)
	row[1] = layout.Float32ToBF16(1.0625) // a tie between 1 and 1.125: nearest even is 1
	r := newRig(t, "fp8-rows", [][]uint16{row})
	r.store(t, "ties-away")
	fs := r.judge(t, "ties-away")
	if len(fs) != 1 || fs[0].Rule != layout.RuleCode || fs[0].Codes.Elem != 1 || fs[0].Codes.Got != 0x39 {
		t.Fatalf("ties away at scale 1: %s", layout.Summary(fs))
	}
	r = newRig(t, "fp8-rows", [][]uint16{row})
	r.store(t, "")
	if fs := r.judge(t, ""); len(fs) > 0 {
		t.Fatalf("the shipped kernel at scale 1: %s", layout.Summary(fs))
	}
}

// TestGeometryIsTheLayouts: what the kernel declares is each layout's
// geometry, dsv4-main at its head dim whatever the harness asks.
func TestGeometryIsTheLayouts(t *testing.T) {
	for _, g := range Plugin.Geometry("", 128, 64) {
		l, err := layout.Builtin(g.Layout, dims(g.Layout), 64)
		if err != nil {
			t.Fatal(err)
		}
		if g.BytesPerToken != l.BytesPerToken() || g.BytesPerPage != l.PageBytes() {
			t.Errorf("%s: declares %d B/token %d B/page, layout has %d and %d", g.Layout, g.BytesPerToken, g.BytesPerPage, l.BytesPerToken(), l.PageBytes())
		}
	}
	if n := len(Plugin.Geometry("", 128, 64)); n != 3 {
		t.Errorf("%d layouts declared, want 3", n)
	}
	for _, v := range Plugin.Variants {
		if r := build(v.Name).recipe; (v.Name == "torch" || v.Name == "eps-undeclared") != (r == nil) {
			t.Errorf("%s declares %v", v.Name, r)
		}
	}
}

// TestOptionsFollowTheVariants: the CUDA kernel gets the CPU kernel's
// place and arithmetic as macros.
func TestOptionsFollowTheVariants(t *testing.T) {
	for _, tc := range []struct {
		variant, layout string
		want            []string
	}{
		{"", "fp8-paged", []string{"-DRS_TOKENS=64", "-DRS_PAGE_BYTES=8448", "-DRS_SCALE_OFF=8192", "-DRS_EPS=1e-08f", "-DRS_RECIP=1", "-DRS_UE8M0=0"}},
		{"", "fp8-rows", []string{"-DRS_TOKENS=1", "-DRS_PAGE_BYTES=132", "-DRS_SCALE_OFF=128"}},
		{"", "dsv4-main", []string{"-DRS_GROUPS=7", "-DRS_GROUP=64", "-DRS_ROPE=64", "-DRS_PAGE_BYTES=37440", "-DRS_SCALE_STRIDE=8", "-DRS_UE8M0=1"}},
		{"torch", "fp8-rows", []string{"-DRS_TORCH=1", "-DRS_EPS=1e-04f"}},
		{"ties-away", "fp8-rows", []string{"-DRS_ROUND=1"}},
		{"bf16-quotient", "fp8-rows", []string{"-DRS_ROUND=2"}},
		{"scale-partial-row", "fp8-rows", []string{"-DRS_PARTIAL=1"}},
		{"ue8m0-round-down", "dsv4-main", []string{"-DRS_EXP_DOWN=1"}},
		{"int32-slots", "fp8-rows", []string{"-DRS_SLOT32=1"}},
	} {
		opts, err := options(tc.variant, sdk.Layout{Name: tc.layout, HeadDim: dims(tc.layout), PageSize: 64})
		if err != nil {
			t.Fatal(err)
		}
		for _, w := range tc.want {
			if !strings.Contains(strings.Join(opts, " ")+" ", w+" ") {
				t.Errorf("%q %s: options %v lack %s", tc.variant, tc.layout, opts, w)
			}
		}
	}
	if _, err := options("", sdk.Layout{Name: "bf16", HeadDim: 128, PageSize: 64}); err == nil {
		t.Error("bf16 accepted")
	}
}
