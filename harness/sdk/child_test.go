package sdk_test

import (
	"context"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/kvharness/kvharness/harness/oracle"
	"github.com/kvharness/kvharness/harness/plugin"
	"github.com/kvharness/kvharness/harness/protocol"
)

// TestChildPlugin checks the machinery the GPU tests stand on, on any
// machine: this test binary started as a plugin process (TestMain) serves
// the bundled plugin over go-plugin, and its stores through shared memory
// match the kernel called directly.
func TestChildPlugin(t *testing.T) {
	ctx := context.Background()
	p := startPlugin(t, "fusedstore")
	d, err := p.Describe(ctx, plugin.Query{HeadDim: 128, PageSize: 64})
	must(t, err)
	if !slices.Contains(d.Backends, protocol.BackendCUDA) || d.Name != "fusedstore" {
		t.Fatalf("Describe = %v", d)
	}
	pl := newPlan([]string{"bf16", "fp8-paged", "fp8-rows"}, 128, 64, 400, 130)
	h := newHostArena(t, pl.size)
	_, err = p.Attach(ctx, h, pl.attach(h.desc(), "minus1-wraps"))
	must(t, err)
	defer p.Detach(ctx)
	rng := rand.New(rand.NewPCG(9, 9))
	for range 10 {
		c := drawCase(rng, pl, "minus1-wraps")
		c.stage(h.mem, pl)
		want := slices.Clone(h.mem)
		direct(t, want, pl, c, "minus1-wraps")
		must(t, storeOn(ctx, p, c.request(pl, false)))
		if i := oracle.FirstDiff(h.mem, want); i >= 0 {
			t.Fatalf("case %+v: the plugin process and the kernel differ at byte %d (%s)", c, i, pl.where(i))
		}
	}
}
