package load

import (
	"context"
	"math/rand"
	"slices"
	"testing"

	"github.com/kvharness/kvharness/harness/arena"
	"github.com/kvharness/kvharness/harness/internal/plugintest"
	"github.com/kvharness/kvharness/harness/kind"
	"github.com/kvharness/kvharness/harness/pool"
)

// farGeometry is a check's edges row's geometry at the default shape.
func farGeometry() Geometry { return DefaultGeometry(DefaultLayers, DefaultPages, 64).Far() }

// TestFarGeometryStraddles: the far pools' largest buffer passes 2^32
// bytes, and for each edge a buffer's pool reaches, the live pages hold
// the byte at it and the byte before it, counted here from the layouts'
// page sizes, each page's byte range written out.
func TestFarGeometryStraddles(t *testing.T) {
	g := farGeometry()
	if err := g.Validate(); err != nil {
		t.Fatal(err)
	}
	live := g.LivePages()
	if !g.IsFar() || len(live) == 0 || len(live) > MaxPages {
		t.Fatalf("far geometry %v: far %v, %d live pages", g, g.IsFar(), len(live))
	}
	reached := false
	for i, b := range g.Buffers {
		l, _ := g.Layout(i)
		size := int64(g.Pages) * int64(l.PageBytes())
		reached = reached || size > 1<<32
		for _, edge := range []int64{1 << 31, 1 << 32} {
			if size <= edge {
				continue
			}
			for _, at := range []int64{edge - 1, edge} {
				held := slices.ContainsFunc(live, func(p int) bool {
					lo := int64(p) * int64(l.PageBytes())
					return lo <= at && at < lo+int64(l.PageBytes())
				})
				if !held {
					t.Errorf("%s (%d-byte pages, %d-byte pool): no live page holds byte %d", b.Name, l.PageBytes(), size, at)
				}
			}
		}
	}
	if !reached {
		t.Errorf("no pool of %v passes 4 GiB", g)
	}
}

// TestEdgesCasesReachFar: every edges case over far pools names live
// pages only, one of them past 2 GiB of some buffer's pool.
func TestEdgesCasesReachFar(t *testing.T) {
	g := farGeometry()
	gen := &Gen{Geometry: g, Profile: ProfileEdges}
	rng := rand.New(rand.NewSource(1))
	for range 200 {
		c := gen.Draw(rng)
		if err := c.Validate(0); err != nil {
			t.Fatalf("%v: %v", c, err)
		}
		far := false
		for _, p := range c.Pages {
			for _, n := range []int{p.Src, p.Dst} {
				far = far || slices.Contains(g.EdgePages(), n)
			}
		}
		if !far {
			t.Fatalf("%v: no page past 2 GiB", c)
		}
	}
	bad := &Case{Geometry: g, Op: OpLoad, Layers: 1, Buffers: []string{BufferKV}, Order: []string{BufferKV}, Pages: []Page{{Src: 5, Dst: 0}}}
	if err := bad.Validate(0); err == nil {
		t.Errorf("%v: a far case naming a page that is not live passed validation", bad)
	}
}

// TestFarPoolsCostTheirLivePages: a control runs edges cases over far
// pools (tens of GiB of arena) and passes, and the arena's files hold no
// more than the live pages, staging and a little room: the pools cost
// what their cases touch.
func TestFarPoolsCostTheirLivePages(t *testing.T) {
	p := inProcess()
	s := &kind.Session{Plugin: p, Dir: plugintest.Dir(t)}
	if why := Reaches(kind.Params{Setup: kind.Setup{Far: true, Backend: arena.SHM{}}}, s); why != "" {
		t.Skip(why)
	}
	ctx := context.Background()
	g := farGeometry()
	sys := NewSystem(p, s.Dir, Config{Seed: 1, Backend: arena.SHM{}, Geometry: g}, &Gen{Geometry: g, Profile: ProfileEdges})
	defer sys.Close(ctx)
	rng := rand.New(rand.NewSource(2))
	cases := 20
	if testing.Short() {
		cases = 5
	}
	for range cases {
		c := sys.Gen.Draw(rng)
		r, err := sys.Check(ctx, c)
		if err != nil {
			t.Fatal(err)
		}
		if len(r.Violations) > 0 {
			t.Fatalf("control on %v: %v", c, r.Violations)
		}
	}
	tg := sys.target
	var size, blocks int64
	for i, r := range tg.Arena.Regions {
		lazy, ok := r.Mem.(arena.Lazy)
		if !ok || !lazy.Sparse() {
			t.Fatalf("region %d is not a sparse file", i)
		}
		b, err := lazy.Blocks()
		if err != nil {
			t.Fatal(err)
		}
		blocks += b * 512
	}
	for _, r := range tg.Pools.Regions {
		size += int64(r.Span().Len)
	}
	planned := int64(pool.Total(liveIn(tg.Pools.Regions, regionDevice, tg.live)) + pool.Total(liveIn(tg.Pools.Regions, regionHost, tg.live)) + tg.Pools.Staging.Len)
	t.Logf("far pools of %.1f GiB: the arena files hold %.1f MiB (live pages, guards and staging %.1f MiB)",
		float64(size)/(1<<30), float64(blocks)/(1<<20), float64(planned)/(1<<20))
	if size < 8<<30 || blocks > planned+8<<20 {
		t.Errorf("far pools of %d bytes hold %d bytes; want at most the %d of their live pages, guards and staging, and a little", size, blocks, planned)
	}
}

// TestOffsetInt32KilledOnlyFar: the 32-bit page offset passes every
// edges case over dense pools (its offsets are right below 2 GiB), and
// dies on far pools, loading from past 2 GiB and storing past 4 GiB.
func TestOffsetInt32KilledOnlyFar(t *testing.T) {
	p := inProcess()
	s := &kind.Session{Plugin: p, Dir: plugintest.Dir(t)}
	ctx := context.Background()
	dense := DefaultGeometry(DefaultLayers, DefaultPages, 64)
	sys := NewSystem(p, s.Dir, Config{Variant: "offset-int32", Seed: 1, Backend: arena.SHM{}, Geometry: dense}, &Gen{Geometry: dense, Profile: ProfileEdges})
	defer sys.Close(ctx)
	rng := rand.New(rand.NewSource(3))
	for range 20 {
		c := sys.Gen.Draw(rng)
		r, err := sys.Check(ctx, c)
		if err != nil {
			t.Fatal(err)
		}
		if len(r.Violations) > 0 {
			t.Fatalf("offset-int32 on dense pools, %v: %v", c, r.Violations)
		}
	}
	if why := Reaches(kind.Params{Setup: kind.Setup{Far: true, Backend: arena.SHM{}}}, s); why != "" {
		t.Skip(why)
	}
	g := farGeometry()
	kvPage := func(at int64) int { return int(at / 16384) } // bf16 D=128 P=64: 16 KiB pages
	cases := []*Case{
		{Geometry: g, Op: OpLoad, Layers: 1, Buffers: []string{BufferKV}, Order: []string{BufferKV}, Pages: []Page{{Src: kvPage(1 << 31), Dst: 0}}},
		{Geometry: g, Op: OpStore, Layers: 1, Buffers: []string{BufferKV}, Order: []string{BufferKV}, Pages: []Page{{Src: 0, Dst: kvPage(1 << 32)}}},
	}
	for _, variant := range []string{"", "offset-int32"} {
		sys := NewSystem(p, s.Dir, Config{Variant: variant, Seed: 1, Backend: arena.SHM{}, Geometry: g}, nil)
		defer sys.Close(ctx)
		for _, c := range cases {
			if err := c.Validate(0); err != nil {
				t.Fatal(err)
			}
			r, err := sys.Check(ctx, c)
			if err != nil {
				t.Fatal(err)
			}
			switch {
			case variant == "" && len(r.Violations) > 0:
				t.Errorf("the control fails %v: %v", c, r.Violations)
			case variant != "" && len(r.Violations) == 0:
				t.Errorf("offset-int32 survives %v", c)
			case variant != "":
				t.Logf("offset-int32 on %v: %v", c, r.Violations[:min(len(r.Violations), 2)])
			}
		}
	}
}
