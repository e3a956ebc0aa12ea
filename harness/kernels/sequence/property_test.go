package sequence

import (
	"context"
	"testing"

	"github.com/kvharness/kvharness/harness/internal/plugintest"
	"github.com/kvharness/kvharness/harness/kind"
	"github.com/kvharness/kvharness/harness/plugin"
	"github.com/kvharness/kvharness/harness/property"
	"github.com/kvharness/kvharness/harness/sdk"
	"github.com/kvharness/kvharness/plugins"
)

// bundled runs a bundled plugin in process (the SDK's server linked in).
func bundled(t testing.TB, name string) *plugin.Plugin {
	t.Helper()
	code, ok := plugins.Lookup(name)
	if !ok || code.Kernel == nil {
		t.Fatalf("no bundled Go plugin %s", name)
	}
	return plugin.InProcess(name, sdk.Services(*code.Kernel))
}

// testGeometry keeps CPU sequences small: pages of 4 tokens, two layers.
var testGeometry = Geometry{HeadDims: []int{64, 32}, PageSize: 4, Pages: 24, Capacities: []int{1, 2, 4, 8}}

func run(t testing.TB, p *plugin.Plugin, variant string, cases int, seed int64, profiles ...string) []property.Verdict[*Case, *Result] {
	t.Helper()
	s := &kind.Session{Plugin: p, Dir: plugintest.Dir(t)}
	params := kind.Params{Variant: variant, Cases: cases, Seed: seed, StopAtFirst: true}
	suite, err := Suite(s, params, SuiteConfig{Geometry: testGeometry, Profiles: profiles})
	if err != nil {
		t.Fatal(err)
	}
	vs, err := suite.Run(context.Background())
	if err != nil {
		t.Fatalf("%s seed %d: %v", variant, seed, err)
	}
	return vs
}

func TestControlsPass(t *testing.T) {
	for _, name := range []string{"fusedstore", "gostore"} {
		for _, v := range run(t, bundled(t, name), "", 200, 1) {
			if f := v.Outcome.Failure; f != nil {
				t.Errorf("%s %s: %v\n%v", name, v.Label, f.Property, f.Minimal.Violations)
			}
		}
	}
}

func TestIncidentAcrossSteps(t *testing.T) {
	vs := run(t, bundled(t, "bf16scatter"), "", 200, 1, ProfileServe)
	f := vs[0].Outcome.Failure
	if f == nil {
		t.Fatal("bf16scatter passed")
	}
	t.Logf("shrinks %d flaky %v\n%v\n%v\n%d candidates", f.Shrinks, f.Flaky, f.Case, f.Minimal.Violations, len(Shrink(f.Case)))
}

// mutants are gostore's lifecycle variants, with the property each dies
// of and the row that draws the sequences it needs.
var mutants = []struct {
	variant, profile string
}{
	{"graph-last-slots", ProfileServe},
	{"late-landing", ProfileOffload},
	{"lazy-source", ProfileOffload},
	{"first-token-back", ProfileServe},
	{"kernel-cache-no-stride", ProfileServe},
}

func TestMutantsDie(t *testing.T) {
	p := bundled(t, "gostore")
	for _, m := range mutants {
		for seed := int64(1); seed <= 10; seed++ {
			vs := run(t, p, m.variant, 200, seed, m.profile)
			f := vs[0].Outcome.Failure
			if f == nil {
				t.Errorf("%s seed %d survived", m.variant, seed)
				continue
			}
			if seed == 1 {
				t.Logf("%s: %v %d steps: %v\n  %v", m.variant, f.Property, len(f.Case.Steps), f.Case, f.Minimal.Violations[0])
			}
			if len(f.Case.Steps) > 4 {
				t.Errorf("%s seed %d: shrunk to %d steps: %v", m.variant, seed, len(f.Case.Steps), f.Case)
			}
		}
	}
}
