package transfer

import (
	"context"
	"math/rand"
	"testing"

	"github.com/kvharness/kvharness/harness/kind"
	"github.com/kvharness/kvharness/harness/pd"
	"github.com/kvharness/kvharness/harness/workload"
)

// TestFarEdgesReachPast4GiB: a default check's edges row (SuiteConfig.Far)
// runs over pools whose largest buffer passes 4 GiB, whatever shape the
// row draws, and its cases name pages that start past 2^31 and past 2^32
// bytes from their pool's base; the other rows keep the flags' pools.
func TestFarEdgesReachPast4GiB(t *testing.T) {
	g := pd.DefaultGeometry(DefaultLayers, 256)
	sc := SuiteConfig{Far: true}
	for _, sh := range []workload.Shape{{HeadDim: 128, PageSize: 64}, {HeadDim: 8, PageSize: 1}, {HeadDim: 120, PageSize: 16}, {HeadDim: 576, PageSize: 256}} {
		sc.Shapes = map[string]workload.Shape{ProfileEdges: sh, ProfileMixed: sh}
		if mixed := sc.geometryOf(g, ProfileMixed); mixed.Pages != 256 {
			t.Errorf("%v: the mixed row's pools have %d pages, want the flags' 256", sh, mixed.Pages)
		}
		far := sc.geometryOf(g, ProfileEdges)
		if err := far.Validate(); err != nil {
			t.Fatalf("%v: %v", sh, err)
		}
		if !far.Sparse() {
			t.Errorf("%v: %v is not sparse", sh, far)
		}
		past := map[int64]int{} // cases naming a page past 2^31, 2^32
		rng := rand.New(rand.NewSource(1))
		gen := &Gen{Geometry: far, Profile: ProfileEdges}
		const cases = 200
		for range cases {
			c := gen.Draw(rng)
			if err := c.Validate(0); err != nil {
				t.Fatalf("%v: %v", sh, err)
			}
			seen := map[int64]bool{}
			for i, b := range far.Buffers {
				l, _ := far.Layout(i)
				for _, r := range c.Rooms {
					for _, p := range append(append([]int64(nil), r.Src...), r.Dst...) {
						off := b.Phys(p, far.Pages) * int64(l.PageBytes())
						for _, edge := range []int64{1 << 31, 1 << 32} {
							seen[edge] = seen[edge] || off >= edge
						}
					}
				}
			}
			for edge, ok := range seen {
				if ok {
					past[edge]++
				}
			}
		}
		t.Logf("%v: %v; of %d cases %d name a page past 2 GiB, %d past 4 GiB", sh, far, cases, past[1<<31], past[1<<32])
		if past[1<<31] < cases/4 || past[1<<32] < cases/10 {
			t.Errorf("%v: of %d cases %d name a page past 2 GiB, %d past 4 GiB: want a quarter and a tenth at least", sh, cases, past[1<<31], past[1<<32])
		}
	}
}

// TestOffsetInt32KilledOnlyFar: an engine that computes page × item_len in
// 32 bits fails the default edges row (far pools), shrunk to one buffer
// and a page past 2 GiB, and passes it over the flags' pools, where no
// offset reaches 2^31; the correct engine passes the far row.
func TestOffsetInt32KilledOnlyFar(t *testing.T) {
	probe := transferSuite(t, inProcess(), "", 1)
	if !pd.Reaches(kind.Params{Setup: kind.Setup{Far: true, Backend: probe.Backend}}, probe.session) {
		t.Skip("the run directory is not on tmpfs: far pools need sparse files")
	}
	for _, tc := range []struct {
		variant string
		far     bool
		fail    bool
	}{{"", true, false}, {"offset-int32", false, false}, {"offset-int32", true, true}} {
		s := transferSuite(t, inProcess(), tc.variant, 100)
		s.Profiles, s.Far = []string{ProfileEdges}, tc.far
		vs, err := s.Run(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		o := vs[0].Outcome
		if !tc.fail {
			if !o.Passed() || o.Cases != 100 {
				t.Errorf("%q far=%v: %d cases, failure %+v, faults %v", tc.variant, tc.far, o.Cases, o.Failure, o.Faults)
			}
			continue
		}
		f := o.Failure
		if f == nil || f.Flaky {
			t.Fatalf("%q far=%v: not caught: %+v", tc.variant, tc.far, o)
		}
		c := f.Case
		if len(c.Geometry.Buffers) != 1 || len(c.Rooms) != 1 || len(c.Rooms[0].Src) != 1 {
			t.Errorf("shrunk to %d buffers, %d rooms: want one page pair of one buffer", len(c.Geometry.Buffers), len(c.Rooms))
		}
		l, _ := c.Geometry.Layout(0)
		b := c.Geometry.Buffers[0]
		far := int64(l.PageBytes()) * max(b.Phys(c.Rooms[0].Src[0], c.Geometry.Pages), b.Phys(c.Rooms[0].Dst[0], c.Geometry.Pages))
		if far < 1<<31 || far >= 1<<31+int64(l.PageBytes()) {
			t.Errorf("the minimal case's far page starts at byte %d: want the first page past 2^31", far)
		}
		t.Logf("caught at case %d, property %s, shrunk in %d steps to %v", o.Cases, f.Property, f.Shrinks, c.Rooms)
	}
}
