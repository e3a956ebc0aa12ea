package sdk_test

import (
	"context"
	"encoding/binary"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"
	"google.golang.org/grpc/codes"

	"github.com/kvharness/kvharness/harness/layout"
	"github.com/kvharness/kvharness/harness/oracle"
	"github.com/kvharness/kvharness/harness/protocol/kvpb"
	"github.com/kvharness/kvharness/harness/protocol/wire"
	"github.com/kvharness/kvharness/harness/sdk"
	"github.com/kvharness/kvharness/harness/sdk/store"
)

// storeRecorder keeps the last store call it was given.
type storeRecorder struct{ last *store.Call }

func (r *storeRecorder) Store(_ context.Context, c *store.Call) error {
	cp := *c
	cp.Loc, cp.Loc32 = slices.Clone(c.Loc), slices.Clone(c.Loc32)
	r.last = &cp
	return nil
}

var sglangRecipe = &layout.Recipe{Eps: new(1e-8), Quantize: layout.Reciprocal}

func declaringPlugin(k any, bits int) sdk.Plugin {
	return sdk.Plugin{Name: "declaring", Kernel: k, Kinds: kindsOf(k), SlotBits: bits,
		Variants: []sdk.Variant{{Name: "wide", SlotBits: 64}, {Name: "plain"}},
		Geometry: func(_ string, d, p int) []sdk.Geometry {
			return []sdk.Geometry{{Layout: "fp8-paged", BytesPerToken: d + 4, BytesPerPage: (d + 4) * p, Recipe: sglangRecipe},
				{Layout: "bf16", BytesPerToken: 2 * d, BytesPerPage: 2 * d * p}}
		}}
}

// TestDescribeDeclares: the slot width (the plugin's, a variant's own) and
// each layout's recipe reach the harness as declared.
func TestDescribeDeclares(t *testing.T) {
	srv := serve(declaringPlugin(&storeRecorder{}, 32))
	for variant, bits := range map[string]uint32{"": 32, "plain": 32, "wide": 64} {
		d, err := srv.Describe(context.Background(), &kvpb.DescribeRequest{Variant: variant, HeadDim: 128, PageSize: 64})
		must(t, err)
		if d.SlotBits != bits {
			t.Errorf("variant %q: slot_bits %d, want %d", variant, d.SlotBits, bits)
		}
		r, err := wire.RecipeFromProto(d.Layouts[0].Recipe)
		must(t, err)
		if diff := cmp.Diff(sglangRecipe, r); diff != "" {
			t.Errorf("fp8-paged recipe (-declared +described):\n%s", diff)
		}
		if d.Layouts[1].Recipe != nil {
			t.Errorf("bf16 declares no recipe, described %v", d.Layouts[1].Recipe)
		}
	}
	d, err := serve(testPlugin(hostOnly{})).Describe(context.Background(), &kvpb.DescribeRequest{})
	must(t, err)
	if d.SlotBits != 64 {
		t.Errorf("a plugin that says nothing: slot_bits %d, want 64", d.SlotBits)
	}
}

// TestDescribeRefusesBadDeclarations: a slot width or a recipe no harness
// can honour is an error naming it, on the first Describe.
func TestDescribeRefusesBadDeclarations(t *testing.T) {
	_, err := serve(declaringPlugin(&storeRecorder{}, 16)).Describe(context.Background(), &kvpb.DescribeRequest{})
	wantStatus(t, err, codes.FailedPrecondition, "16-bit slots", "SlotBits 32 or 64")
	p := declaringPlugin(&storeRecorder{}, 0)
	p.Geometry = func(string, int, int) []sdk.Geometry {
		return []sdk.Geometry{{Layout: "fp8-rows", Recipe: &layout.Recipe{Eps: new(-1.0)}}}
	}
	_, err = serve(p).Describe(context.Background(), &kvpb.DescribeRequest{})
	wantStatus(t, err, codes.FailedPrecondition, "fp8-rows", "recipe eps -1")
	p = declaringPlugin(&storeRecorder{}, 0)
	p.ReadNonFinite = layout.Propagate
	_, err = serve(p).Describe(context.Background(), &kvpb.DescribeRequest{})
	wantStatus(t, err, codes.FailedPrecondition, `ReadNonFinite "propagate"`, "layout.Contained or nothing")
}

// TestDescribeDeclaresReadNonFinite: a read kernel's non-finite policy
// reaches the harness as declared; a plugin that says nothing declares
// none.
func TestDescribeDeclaresReadNonFinite(t *testing.T) {
	p := declaringPlugin(&storeRecorder{}, 0)
	for policy, want := range map[layout.NonFinite]kvpb.NonFinite{"": kvpb.NonFinite_NON_FINITE_UNDECLARED,
		layout.Contained: kvpb.NonFinite_NON_FINITE_CONTAINED} {
		p.ReadNonFinite = policy
		d, err := serve(p).Describe(context.Background(), &kvpb.DescribeRequest{HeadDim: 128, PageSize: 64})
		must(t, err)
		if d.ReadNonFinite != want {
			t.Errorf("declared %q: read_non_finite %v, want %v", policy, d.ReadNonFinite, want)
		}
	}
}

// TestAttachGeometryCarriesRecipe: the attach answer repeats each pool's
// declared recipe.
func TestAttachGeometryCarriesRecipe(t *testing.T) {
	pl := newPlan([]string{"fp8-paged", "bf16"}, 128, 64, 64, 8)
	h := newHostArena(t, pl.size)
	resp, err := serve(declaringPlugin(&storeRecorder{}, 0)).Attach(context.Background(), pl.attach(h.desc(), ""))
	must(t, err)
	if resp.Geometry[0].Recipe.GetEps() != 1e-8 || resp.Geometry[0].BytesPerToken != 132 || resp.Geometry[1].Recipe != nil {
		t.Errorf("attach geometry %v", resp.Geometry)
	}
}

// TestStoreSlotWidths: a 32-bit kernel gets the int32 staging and the same
// slots widened, -1 and the largest int32 included; loc staged at another
// width than declared is refused, naming both widths.
func TestStoreSlotWidths(t *testing.T) {
	ctx := context.Background()
	pl := newPlan([]string{"bf16"}, 128, 64, 64, 8)
	h := newHostArena(t, pl.size)
	rec := &storeRecorder{}
	srv := serve(declaringPlugin(rec, 32))
	_, err := srv.Attach(ctx, pl.attach(h.desc(), ""))
	must(t, err)
	slots := []int32{3, -1, 0, 1<<31 - 1, -2}
	for i, v := range slots {
		binary.LittleEndian.PutUint32(h.mem[pl.locOff+4*i:], uint32(v))
	}
	req := &kvpb.StoreRequest{Capacity: uint32(len(slots)), Valid: 2, RowsOffset: uint64(pl.rowsOff), LocOffset: uint64(pl.locOff), SlotBits: 32}
	_, err = srv.Store(ctx, req)
	must(t, err)
	c := rec.last
	want64 := []int64{3, -1, 0, 1<<31 - 1, -2}
	if c.SlotBits != 32 || !slices.Equal(c.Loc32, slots) || !slices.Equal(c.Loc, want64) {
		t.Errorf("32-bit call: bits %d, loc32 %v, loc %v; want %v and %v", c.SlotBits, c.Loc32, c.Loc, slots, want64)
	}
	req.SlotBits = 0 // an older harness: 64-bit staging
	_, err = srv.Store(ctx, req)
	wantStatus(t, err, codes.InvalidArgument, "staged as 64-bit slots", "reads 32-bit slots")

	srv = serve(declaringPlugin(rec, 0))
	_, err = srv.Attach(ctx, pl.attach(h.desc(), ""))
	must(t, err)
	req.SlotBits = 32
	_, err = srv.Store(ctx, req)
	wantStatus(t, err, codes.InvalidArgument, "staged as 32-bit slots", "reads 64-bit slots")
	req.SlotBits = 64
	_, err = srv.Store(ctx, req)
	must(t, err)
	if rec.last.SlotBits != 64 || rec.last.Loc32 != nil || len(rec.last.Loc) != len(slots) {
		t.Errorf("64-bit call: %+v", rec.last)
	}
}

// TestStore32BitStagingBounds: 32-bit slots occupy 4 bytes each, so a
// capacity that fits staging at 4 bytes but not at 8 is accepted.
func TestStore32BitStagingBounds(t *testing.T) {
	ctx := context.Background()
	pl := newPlan([]string{"bf16"}, 128, 64, 64, 8)
	h := newHostArena(t, pl.size)
	srv := serve(declaringPlugin(&storeRecorder{}, 32))
	_, err := srv.Attach(ctx, pl.attach(h.desc(), ""))
	must(t, err)
	tail := uint64(pl.size - 4*8) // room for 8 int32 slots, 4 int64 ones
	req := &kvpb.StoreRequest{Capacity: 8, Valid: 8, RowsOffset: uint64(pl.rowsOff), LocOffset: tail, SlotBits: 32}
	_, err = srv.Store(ctx, req)
	must(t, err)
	req.LocOffset = tail - 2 // misaligned for int32
	_, err = srv.Store(ctx, req)
	wantStatus(t, err, codes.InvalidArgument, "not aligned to 4 bytes")
}

// TestInt32SlotsStoreTheSame: recipestore's int32 build, staged at 32
// bits, leaves the arena as its int64 build staged at 64 does, -1 padding
// included: the SDK reads the narrower staging as the kernel declared.
func TestInt32SlotsStoreTheSame(t *testing.T) {
	ctx := context.Background()
	pl := newPlan([]string{"fp8-paged", "fp8-rows"}, 128, 64, 400, 130)
	rng := rand.New(rand.NewPCG(4, 5))
	for range 8 {
		var arenas [2][]byte
		c := drawCase(rng, pl, "")
		for i, b := range []struct {
			variant string
			bits    int
		}{{"", 64}, {"int32-slots", 32}} {
			h := newHostArena(t, pl.size)
			srv := serve(bundled["recipestore"])
			_, err := srv.Attach(ctx, pl.attach(h.desc(), b.variant))
			must(t, err)
			c.bits = b.bits
			c.stage(h.mem, pl)
			_, err = srv.Store(ctx, c.request(pl, false))
			must(t, err)
			arenas[i] = slices.Clone(h.mem[:pl.rowsOff]) // pools and guards; staging differs by width
		}
		if i := oracle.FirstDiff(arenas[0], arenas[1]); i >= 0 {
			t.Fatalf("case %+v: 64- and 32-bit slots differ at byte %d (%s)", c, i, pl.where(i))
		}
	}
}

// TestDescribeHeadsAndPads: a plugin declaring by head count gets the
// heads asked (one when none is), its pad policy reaches the wire, and a
// policy the wire cannot carry is refused naming it.
func TestDescribeHeadsAndPads(t *testing.T) {
	p := declaringPlugin(&storeRecorder{}, 0)
	p.GeometryHeads = func(_ string, h, d, pg int) []sdk.Geometry {
		return []sdk.Geometry{{Layout: "vllm-flash", BytesPerToken: 4 * h * d, BytesPerPage: 4 * h * d * pg},
			{Layout: "dsv4-main", BytesPerToken: 584, BytesPerPage: 584 * pg, PadPolicy: layout.PadKeep}}
	}
	for heads, want := range map[uint32]uint64{0: 4 * 128, 1: 4 * 128, 8: 4 * 8 * 128} {
		d, err := serve(p).Describe(context.Background(), &kvpb.DescribeRequest{HeadDim: 128, PageSize: 16, Heads: heads})
		must(t, err)
		if d.Layouts[0].BytesPerToken != want {
			t.Errorf("heads %d: %d B/token, want %d", heads, d.Layouts[0].BytesPerToken, want)
		}
		if got := wire.PadPolicyFromProto(d.Layouts[1].PadPolicy); got != layout.PadKeep || d.Layouts[0].PadPolicy != kvpb.PadPolicy_PAD_POLICY_LAYOUT {
			t.Errorf("pad policies %v, %v: want the layout's, then keep", d.Layouts[0].PadPolicy, got)
		}
	}
	p.GeometryHeads = func(string, int, int, int) []sdk.Geometry {
		return []sdk.Geometry{{Layout: "dsv4-main", PadPolicy: "kept"}}
	}
	_, err := serve(p).Describe(context.Background(), &kvpb.DescribeRequest{})
	wantStatus(t, err, codes.FailedPrecondition, "dsv4-main", `pad policy "kept"`)
}
