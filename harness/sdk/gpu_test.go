package sdk_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/kvharness/kvharness/harness/cuda"
	"github.com/kvharness/kvharness/harness/oracle"
	"github.com/kvharness/kvharness/harness/plugin"
)

// geometries are the head dims and page sizes the equivalence test runs:
// the incident's (the fast paths), then a short row with a page size that
// is not a power of two, then a row of two fp8 chunks with a partial one.
var geometries = [][2]int{{128, 64}, {48, 5}, {192, 16}}

// TestStoreMatchesCPU: for every bundled plugin, variant and layout, the
// CUDA kernel, eager and replayed from a graph, leaves the arena exactly as
// the plugin's CPU kernel leaves a host copy of it, guards and staging
// included. The second geometry's arena is shared by IPC handle, the
// others by descriptor: both ways a plugin maps an arena run every variant.
func TestStoreMatchesCPU(t *testing.T) {
	dev := openDevice(t)
	for _, name := range []string{"bf16scatter", "fusedstore", "fp8store", "recipestore"} {
		t.Run(name, func(t *testing.T) {
			t.Parallel() // separate plugin processes and arenas: their NVRTC compiles overlap
			p := startPlugin(t, name)
			for i, pl := range plansOf(name) {
				compareGeometry(t, dev, p, name, pl, i == 1)
			}
		})
	}
}

// plansOf is a plugin's arenas for the equivalence test: its layouts at
// every geometry, and its fixed-dimension layouts at their own head dim.
func plansOf(name string) []arenaPlan {
	var out []arenaPlan
	for _, g := range geometries {
		out = append(out, newPlan(layoutsOf[name], g[0], g[1], 400, 130))
	}
	for _, l := range fixedLayoutsOf[name] {
		out = append(out, newPlan([]string{l.name}, l.headDim, 64, 400, 130), newPlan([]string{l.name}, l.headDim, 5, 400, 130))
	}
	return out
}

// variantsOf lists a plugin's variants the CPU and GPU kernels are
// compared on: all but fusedstore's oob-write, which writes a terabyte
// past the arena (the CPU kernel panics, the GPU one faults; it is
// scripts/gpu-sanitize's case).
func variantsOf(name string) []string {
	vs := []string{""}
	for _, v := range bundled[name].Variants {
		if v.Name != "oob-write" {
			vs = append(vs, v.Name)
		}
	}
	return vs
}

// pair is one plugin on a GPU arena and its CPU kernel on a host copy of
// the same plan.
type pair struct {
	p    *plugin.Plugin
	cpu  served
	ga   *gpuArena
	host *hostArena
	pl   arenaPlan
}

// compareGeometry runs every variant on one arena plan.
func compareGeometry(t *testing.T, dev *cuda.Device, p *plugin.Plugin, name string, pl arenaPlan, ipc bool) {
	ctx := context.Background()
	newArena := newGPUArena
	if ipc {
		newArena = newIPCArena
	}
	ga := newArena(t, dev, pl.size)
	defer ga.free()
	defer p.Detach(ctx)
	for _, variant := range variantsOf(name) {
		start := time.Now()
		_, err := p.Attach(ctx, ga, pl.attach(ga.desc(), variant))
		must(t, err)
		t.Logf("%s %q D=%d P=%d: attach (map by %s and NVRTC compile of %d pools) %v",
			name, variant, pl.pools[0].Layout.HeadDim, pl.pools[0].Layout.PageSize, sharing(ga), len(pl.pools), time.Since(start))
		pr := pair{p: p, cpu: serve(bundled[name]), ga: ga, host: newHostArena(t, pl.size), pl: pl}
		_, err = pr.cpu.Attach(ctx, pl.attach(pr.host.desc(), variant))
		must(t, err)
		rng := rand.New(rand.NewPCG(uint64(pl.size), uint64(len(variant))))
		for i := range pr.host.mem {
			pr.host.mem[i] = byte(rng.Uint32())
		}
		for range 16 {
			c := drawCase(rng, pl, variant)
			c.bits = slotBits(name, variant)
			pr.compare(t, c, fmt.Sprintf("%s %q", name, variant))
		}
	}
}

// compare runs c on the CPU, then on the GPU from the same arena contents,
// eagerly and from a graph, and compares the whole arenas.
func (pr pair) compare(t *testing.T, c storeCase, label string) {
	t.Helper()
	ctx := context.Background()
	c.stage(pr.host.mem, pr.pl)
	before := slices.Clone(pr.host.mem)
	_, err := pr.cpu.Store(ctx, c.request(pr.pl, false))
	must(t, err)
	for _, graph := range []bool{false, true} {
		pr.ga.write(t, 0, before)
		must(t, storeOn(ctx, pr.p, c.request(pr.pl, graph)))
		got := pr.ga.read(t)
		if i := oracle.FirstDiff(got, pr.host.mem); i >= 0 {
			pd := pr.pl.pools[c.pool]
			t.Fatalf("%s %s D=%d P=%d capacity %d valid %d %v graph=%v: byte %d (%s) is %#02x on the GPU, %#02x on the CPU (was %#02x)",
				label, pd.Name, pd.Layout.HeadDim, pd.Layout.PageSize, c.capacity, c.n, c.padding, graph,
				i, pr.pl.where(i), got[i], pr.host.mem[i], before[i])
		}
	}
}
