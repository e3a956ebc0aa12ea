package pdasync

import (
	"context"
	"math/rand"
	"testing"

	"github.com/kvharness/kvharness/harness/arena"
	"github.com/kvharness/kvharness/harness/internal/plugintest"
	"github.com/kvharness/kvharness/harness/kind"
	"github.com/kvharness/kvharness/harness/pd"
	"github.com/kvharness/kvharness/harness/plugin"
	"github.com/kvharness/kvharness/harness/sdk"
	"github.com/kvharness/kvharness/plugins/pdasync/kernel"
)

// farParams are the params of an edges row over far pools, in a run
// directory the test skips unless it is on tmpfs (sparse files).
func farParams(t *testing.T, variant string, cases int) (kind.Params, *kind.Session) {
	t.Helper()
	p := kind.Params{Variant: variant, Cases: cases, Seed: 1, StopAtFirst: true, Setup: kind.Setup{Backend: arena.SHM{}, Far: true}}
	s := &kind.Session{Plugin: plugin.InProcess("pdasync", sdk.Services(kernel.Plugin)), Dir: plugintest.Dir(t)}
	if !pd.Reaches(p, s) {
		t.Skip("the run directory is not on tmpfs: far pools need sparse files")
	}
	return p, s
}

// TestFarEdgesReach: the edges row of far pools places rooms past 2 GiB
// and 4 GiB of byte offsets in some buffer, and holds a few pages of them.
func TestFarEdgesReach(t *testing.T) {
	g := pd.DefaultGeometry(DefaultLayers, DefaultPages).Far()
	if !g.Sparse() {
		t.Fatalf("%v is not sparse", g)
	}
	gen := &Gen{Geometry: g, Profile: ProfileEdges}
	rng := rand.New(rand.NewSource(1))
	const cases = 200
	past := map[int64]int{}
	for range cases {
		c := gen.Draw(rng)
		if err := c.Validate(0); err != nil {
			t.Fatalf("drawn case invalid: %v", err)
		}
		if len(c.PageTable) != 0 {
			t.Fatal("an edges case with a page table: a far pool's would be a quarter of a million entries")
		}
		most := int64(0)
		for ri := range c.Rooms {
			for i, p := range c.PhysPages(ri) {
				for b := range g.Buffers {
					l, _ := g.Layout(b)
					for _, q := range []int64{p, c.Rooms[ri].Src[i]} {
						most = max(most, int64(l.PageBytes())*(g.Buffers[b].Phys(q, g.Pages)+1))
					}
				}
			}
		}
		for _, edge := range []int64{1 << 31, 1 << 32} {
			if most > edge {
				past[edge]++
			}
		}
	}
	if past[1<<31] < cases/4 || past[1<<32] < cases/10 {
		t.Errorf("of %d cases %d reach past 2 GiB, %d past 4 GiB: want a quarter and a tenth at least", cases, past[1<<31], past[1<<32])
	}
}

// TestOffsetInt32KilledOnlyFar: a prefill that computes page × item_len
// in 32 bits fails the edges row over far pools, shrunk to one room, and
// passes it over the flags' pools, where no offset reaches 2^31; the
// correct engine passes the far row, with no false alarm from the pages
// it never touched.
func TestOffsetInt32KilledOnlyFar(t *testing.T) {
	for _, tc := range []struct {
		variant   string
		far, fail bool
	}{{"", true, false}, {kernel.OffsetInt32, false, false}, {kernel.OffsetInt32, true, true}} {
		const cases = 60
		p, s := farParams(t, tc.variant, cases)
		suite, err := Suite(s, p, SuiteConfig{Profiles: []string{ProfileEdges}, Far: tc.far, Spawn: inProcessSpawn})
		if err != nil {
			t.Fatal(err)
		}
		vs, err := suite.Run(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		o := vs[0].Outcome
		if !tc.fail {
			if !o.Passed() || o.Cases != cases {
				t.Errorf("%q far=%v: %d cases, failure %+v, faults %v", tc.variant, tc.far, o.Cases, o.Failure, o.Faults)
			}
			continue
		}
		f := o.Failure
		if f == nil || f.Flaky {
			t.Fatalf("%q far=%v: not caught: %+v", tc.variant, tc.far, o)
		}
		if len(f.Case.Rooms) != 1 {
			t.Errorf("shrunk to %d rooms: want one", len(f.Case.Rooms))
		}
		t.Logf("caught at case %d, property %s, shrunk in %d steps to %v over %v", o.Cases, f.Property, f.Shrinks, f.Case.Rooms, f.Case.Geometry)
	}
}

// TestFarStrayWriteSeen: a copy that wraps to a page no case named, in a
// far decode pool whose unnamed pages are holes, is reported where it
// landed (the stray page, as outside) and where it should have (the
// room's page, as bytes): the oracle watches the case's pages alone, and
// finds the rest by the holes a write allocates.
func TestFarStrayWriteSeen(t *testing.T) {
	p, s := farParams(t, kernel.OffsetInt32, 1)
	g := pd.Geometry{PageSize: 64, Pages: 1, Buffers: []pd.Buffer{{Name: "L0.kv", Layout: "bf16", HeadDim: 128}}}
	g.Pages = g.FarPages()
	edge := int64(1<<32) / (2 * 128 * 64) // the first page at 4 GiB: its int32 offset wraps to 0
	c := &Case{Geometry: g, Rooms: []Room{{ID: 1, Src: []int64{1}, Virt: []int64{edge},
		Components: []Component{{Buffers: []int{0}, Handles: []Handle{{First: 0, Pages: 1}}}}}}}
	decode := plugin.InProcess("pdasync", sdk.Services(kernel.Plugin))
	sys := NewSystem(s.Plugin, decode, s.Dir, Config{Variant: p.Variant, Seed: 1, PrefillBackend: arena.SHM{}}, nil)
	defer sys.Close(context.Background())
	res, err := sys.Check(context.Background(), c)
	if err != nil {
		t.Fatal(err)
	}
	var stray, bytes bool
	for _, v := range res.Violations {
		stray = stray || v.Kind == Outside && v.DstPage == 0
		bytes = bytes || v.Kind == Bytes && v.DstPage == edge
	}
	if !stray || !bytes {
		t.Fatalf("violations %+v: want outside at page 0 (where the wrapped copy landed) and bytes at page %d", res.Violations, edge)
	}
	// The correct engine passes the same case, twice on one target (the
	// second run over pages the first gave back).
	ok := NewSystem(plugin.InProcess("pdasync", sdk.Services(kernel.Plugin)), plugin.InProcess("pdasync", sdk.Services(kernel.Plugin)),
		s.Dir, Config{Seed: 1, PrefillBackend: arena.SHM{}}, nil)
	defer ok.Close(context.Background())
	for range 2 {
		if res, err = ok.Check(context.Background(), c); err != nil || len(res.Violations) > 0 {
			t.Fatalf("correct engine: %v, %+v", err, res.Violations)
		}
	}
}
