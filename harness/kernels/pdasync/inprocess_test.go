package pdasync

import (
	"context"
	"math/rand"
	"strings"
	"testing"

	"github.com/kvharness/kvharness/harness/property"

	"github.com/kvharness/kvharness/harness/internal/plugintest"
	"github.com/kvharness/kvharness/harness/pd"
	"github.com/kvharness/kvharness/harness/plugin"
	"github.com/kvharness/kvharness/harness/sdk"
	"github.com/kvharness/kvharness/plugins/pdasync/kernel"
)

// inProcess is a system on two in-process servers of the bundled plugin:
// the property tests' fast path (the same SDK and engine, no gRPC).
func inProcess(t testing.TB, variant string, g pd.Geometry, profile string) *System {
	t.Helper()
	dir := plugintest.Dir(t)
	pre := plugin.InProcess("pdasync", sdk.NewServer(kernel.Plugin))
	dec := plugin.InProcess("pdasync", sdk.NewServer(kernel.Plugin))
	sys := NewSystem(pre, dec, dir, Config{Variant: variant, Seed: 1}, &Gen{Geometry: g, Profile: profile})
	t.Cleanup(func() { sys.Close(context.Background()) })
	return sys
}

func TestDebugRun(t *testing.T) {
	g := pd.DefaultGeometry(DefaultLayers, DefaultPages)
	sys := inProcess(t, "", g, ProfileMixed)
	rng := rand.New(rand.NewSource(1))
	for i := range 300 {
		c := sys.Draw(rng)
		r, err := sys.Check(context.Background(), c)
		if err != nil {
			t.Fatal(i, err)
		}
		if r.Failed() {
			for _, v := range r.Violations {
				t.Log(v)
			}
			for _, l := range r.Trace {
				t.Log(l)
			}
			t.Fatalf("case %d %v failed", i, c)
		}
	}
}

func TestDebugMutants(t *testing.T) {
	g := pd.DefaultGeometry(DefaultLayers, DefaultPages)
	for _, v := range kernel.Plugin.Variants {
		sys := inProcess(t, v.Name, g, ProfileMixed)
		o := property.Run[*Case, *Result](context.Background(), sys, property.Config{Cases: 500, Seed: 7})
		if o.Failure == nil {
			t.Errorf("%s survived %d cases (fault %v)", v.Name, o.Cases, o.Fault)
			continue
		}
		f := o.Failure
		t.Logf("%s: killed by %s after %d cases, %d shrinks, flaky %v: %v", v.Name, f.Property, o.Cases, f.Shrinks, f.Flaky, f.Case)
		var b strings.Builder
		WriteCase(&b, nil, f.Case, f.Minimal)
		t.Log("\n" + b.String())
	}
}
