package load

import (
	"context"
	"math/rand"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/kvharness/kvharness/harness/arena"
	"github.com/kvharness/kvharness/harness/cuda/cudatest"
	"github.com/kvharness/kvharness/harness/internal/plugintest"
	"github.com/kvharness/kvharness/harness/kind"
	"github.com/kvharness/kvharness/harness/plugin"
	"github.com/kvharness/kvharness/harness/pool"
	"github.com/kvharness/kvharness/harness/sdk"
	layerload "github.com/kvharness/kvharness/plugins/layerload/kernel"
)

// The GPU half of the load kind's tests, on the layerload binary with the
// device pools in GPU memory and the host pool pinned by the plugin
// (cuMemHostRegister), real CUDA streams, events and stream memory
// operations, the latch a cuStreamWaitValue32. ./scripts/gpu-load runs
// them on the GPU machine; without a driver they skip.

// TestLoadOnGPU: the controls pass KVHARNESS_LOAD_CASES cases (default
// 10,000 each, 1,000 under -short), every mutant dies in its row within ten cases under ten
// seeds, confirmed and shrunk, and with the latch off the checker flags
// the missing index-K gate on runs where its probe saw the loaded bytes.
func TestLoadOnGPU(t *testing.T) {
	dev := cudatest.Device(t)
	backend := arena.CUDA{Dev: dev}
	total, seeds := 10000, 10
	if testing.Short() {
		// Each control's 10,000 cases take about 26 s on an H200; with
		// ten seeds the whole test took 353 s on an H100, most of it the
		// mutant table's 110 hunts (2.9–7.9 s each).
		total, seeds = 1000, 3
	}
	if n, err := strconv.Atoi(os.Getenv("KVHARNESS_LOAD_CASES")); err == nil && n > 0 {
		total = n
	}
	start := func() *plugin.Plugin {
		p, _ := plugintest.Start(t, "layerload")
		return p
	}
	passesControls(t, "GPU ", start, backend, total/len(Profiles))
	killTable(t, start, backend, seeds)
	latchOff(t, start(), backend, 200)
}

// latchOff runs the missing index-K gate's minimal case with the latch
// off, n times, on real streams: timing decides what the probe sees; the
// checker must flag every run, those where the probe saw the loaded bytes
// included.
func latchOff(t *testing.T, p *plugin.Plugin, backend arena.Backend, n int) {
	c := missingGate()
	c.NoLatch = true
	sys := NewSystem(p, plugintest.Dir(t), Config{Variant: "indexk-gate-missing", Seed: 1, Backend: backend, Geometry: c.Geometry}, nil)
	defer sys.Close(context.Background())
	lucky, flagged := 0, 0
	for range n {
		r, err := sys.Check(context.Background(), c)
		if err != nil {
			t.Fatal(err)
		}
		if r.Has(Race) {
			flagged++
			if !r.Has(ReadEarly) {
				lucky++
			}
		}
	}
	t.Logf("latch off, %d runs of %v: the checker flagged %d; in %d of them the probe saw the loaded bytes", n, c, flagged, lucky)
	if flagged != n {
		t.Errorf("the checker missed %d of %d runs", n-flagged, n)
	}
}

// TestSanitizerTarget is what compute-sanitizer wraps (racecheck,
// synccheck): the missing index-K gate, latched and not, in this one
// process, so that the sanitizer sees the plugin's streams and writes its
// summary (a plugin process is killed at the end, which loses it). It runs
// only when KVHARNESS_SANITIZER_TARGET=1.
func TestSanitizerTarget(t *testing.T) {
	if os.Getenv("KVHARNESS_SANITIZER_TARGET") != "1" {
		t.Skip("set KVHARNESS_SANITIZER_TARGET=1 and run under compute-sanitizer (./scripts/gpu-load does)")
	}
	dev := cudatest.Device(t)
	p := plugin.InProcess("layerload", sdk.Services(layerload.Plugin))
	for _, latched := range []bool{true, false} {
		c := missingGate()
		c.NoLatch = !latched
		r := checkOne(t, p, "indexk-gate-missing", arena.CUDA{Dev: dev}, c)
		t.Logf("latched %v: %d violations (stale read %v, happens-before %v)", latched, len(r.Violations), r.Has(ReadEarly), r.Has(Race))
		if !r.Has(Race) {
			t.Errorf("latched %v: the checker did not flag the missing gate", latched)
		}
	}
}

// TestLoadFarOnGPU: the edges row over far pools on the GPU, on the
// layerload binary: the device pools are a virtual reservation past
// 4 GiB of offsets with only their live pages backed, and the SDK pins
// only the host pages copies touch. A control passes KVHARNESS_LOAD_CASES
// edges cases (default 500) with the host region's files holding no more
// than the live pages; offset-int32 dies loading from past 2 GiB and
// storing past 4 GiB.
func TestLoadFarOnGPU(t *testing.T) {
	dev := cudatest.Device(t)
	backend := arena.CUDA{Dev: dev}
	ctx := context.Background()
	p, _ := plugintest.Start(t, "layerload")
	d, err := p.Describe(ctx, plugin.Query{})
	if err != nil {
		t.Fatal(err)
	}
	s := &kind.Session{Plugin: p, Dir: plugintest.Dir(t), Desc: d}
	if why := Reaches(kind.Params{Setup: kind.Setup{Far: true, Backend: backend}}, s); why != "" {
		t.Fatalf("the edges row does not reach far on the GPU: %s", why)
	}
	cases := 500
	if n, err := strconv.Atoi(os.Getenv("KVHARNESS_LOAD_CASES")); err == nil && n > 0 {
		cases = n
	}
	g := farGeometry()
	sys := NewSystem(p, s.Dir, Config{Seed: 1, Backend: backend, Geometry: g}, &Gen{Geometry: g, Profile: ProfileEdges})
	defer sys.Close(ctx)
	rng := rand.New(rand.NewSource(1))
	began := time.Now()
	for i := range cases {
		c := sys.Gen.Draw(rng)
		r, err := sys.Check(ctx, c)
		if err != nil {
			t.Fatalf("case %d, %v: %v", i+1, c, err)
		}
		if len(r.Violations) > 0 {
			t.Fatalf("the control fails case %d, %v: %v", i+1, c, r.Violations)
		}
	}
	tg := sys.target
	host := tg.Arena.Regions[regionHost].Mem.(arena.Lazy)
	blocks, err := host.Blocks()
	if err != nil {
		t.Fatal(err)
	}
	live := int64(pool.Total(liveIn(tg.Pools.Regions, regionHost, tg.live)))
	t.Logf("GPU far pools of %d pages a pool: %d edges cases passed in %v; the host region's file holds %d KiB (its live pages and guards %d KiB)",
		g.Pages, cases, time.Since(began).Round(time.Millisecond), blocks/2, live>>10)
	if blocks*512 > live+8<<20 {
		t.Errorf("the host region's file holds %d bytes; want at most its live pages' %d and a little", blocks*512, live)
	}
	mut, _ := plugintest.Start(t, "layerload")
	msys := NewSystem(mut, s.Dir, Config{Variant: "offset-int32", Seed: 1, Backend: backend, Geometry: g}, nil)
	defer msys.Close(ctx)
	kvPage := func(at int64) int { return int(at / 16384) }
	for _, c := range []*Case{
		{Geometry: g, Op: OpLoad, Layers: 1, Buffers: []string{BufferKV}, Order: []string{BufferKV}, Pages: []Page{{Src: kvPage(1 << 31), Dst: 0}}},
		{Geometry: g, Op: OpStore, Layers: 1, Buffers: []string{BufferKV}, Order: []string{BufferKV}, Pages: []Page{{Src: 0, Dst: kvPage(1 << 32)}}},
	} {
		r, err := msys.Check(ctx, c)
		if err != nil {
			t.Fatalf("offset-int32 on %v: %v", c, err)
		}
		if len(r.Violations) == 0 {
			t.Errorf("offset-int32 survives %v on the GPU", c)
		}
		t.Logf("offset-int32 on %v: %v", c, r.Violations[:min(len(r.Violations), 2)])
	}
}
