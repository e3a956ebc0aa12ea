package sequence

import (
	"context"
	"os"
	"strconv"
	"testing"

	"github.com/kvharness/kvharness/harness/arena"
	"github.com/kvharness/kvharness/harness/internal/plugintest"
	"github.com/kvharness/kvharness/harness/kind"
	"github.com/kvharness/kvharness/harness/plugin"
	"github.com/kvharness/kvharness/harness/property"
	"github.com/kvharness/kvharness/harness/sdk"
	"github.com/kvharness/kvharness/plugins"
)

// The tests run bundled plugins in process (the SDK's server linked in,
// no gRPC) unless they say otherwise. KVHARNESS_LONG=1 turns on the
// campaigns: the controls over KVHARNESS_SEQUENCE_CASES sequences each
// (default 10,000, of at least 20 steps).

func long() bool { return os.Getenv("KVHARNESS_LONG") != "" && !testing.Short() }

// bundled runs a bundled plugin in process.
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
	params := kind.Params{Variant: variant, Cases: cases, Seed: seed, StopAtFirst: true, Setup: kind.Setup{Backend: arena.SHM{}}}
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

// TestControlsPass: two correct stores written apart (fusedstore's
// padding-aware kernel, gostore's plain one) pass every sequence of both
// rows: no false alarm from frees, reuse, sharing, copies on write,
// evictions or replays.
func TestControlsPass(t *testing.T) {
	cases := 200
	if long() {
		cases = 5000 // a row: 10,000 sequences a control
		if n, err := strconv.Atoi(os.Getenv("KVHARNESS_SEQUENCE_CASES")); err == nil && n > 0 {
			cases = n / 2
		}
	}
	for _, name := range []string{"fusedstore", "gostore"} {
		steps := 0
		for _, v := range run(t, bundled(t, name), "", cases, 1) {
			if f := v.Outcome.Failure; f != nil {
				t.Errorf("%s %s: %v on %v\n%v", name, v.Label, f.Property, f.Case, f.Minimal.Violations)
			}
			steps += v.Outcome.Cases
		}
		t.Logf("%s: %d sequences passed", name, steps)
	}
}

// TestIncidentAcrossSteps: the incident's pad-unaware scatter fails the
// serving row with an ownership violation that names the page's owner,
// the former owner whose row it holds and the step that last wrote it.
func TestIncidentAcrossSteps(t *testing.T) {
	vs := run(t, bundled(t, "bf16scatter"), "", 200, 1, ProfileServe)
	f := vs[0].Outcome.Failure
	if f == nil {
		t.Fatal("bf16scatter passed")
	}
	v := f.Minimal.Violations[0]
	if f.Property != Ownership || v.Former == 0 || v.Former == v.Owner || v.LastWrite < 0 || v.Holds == "" {
		t.Fatalf("want an ownership violation naming a former owner; got %v: %+v", f.Property, v)
	}
	if len(f.Case.Steps) > 8 {
		t.Errorf("shrunk to %d steps: %v", len(f.Case.Steps), f.Case)
	}
	t.Logf("%v\n%v", f.Case, v)
}

// mutants are gostore's lifecycle variants, each with the row that draws
// the sequences it needs.
var mutants = []struct {
	variant, profile string
}{
	{"graph-last-slots", ProfileServe},
	{"late-landing", ProfileOffload},
	{"lazy-source", ProfileOffload},
	{"first-token-back", ProfileServe},
	{"kernel-cache-no-stride", ProfileServe},
}

// TestMutantsDie: every lifecycle mutant dies in 10 of 10 seeds, shrunk
// to at most 4 steps.
func TestMutantsDie(t *testing.T) {
	p := bundled(t, "gostore")
	for _, m := range mutants {
		for seed := int64(1); seed <= 10; seed++ {
			f := run(t, p, m.variant, 200, seed, m.profile)[0].Outcome.Failure
			if f == nil {
				t.Errorf("%s seed %d survived", m.variant, seed)
				continue
			}
			if len(f.Case.Steps) > 4 {
				t.Errorf("%s seed %d: shrunk to %d steps: %v", m.variant, seed, len(f.Case.Steps), f.Case)
			}
		}
	}
}

// TestEveryLifecycleVariantIsListed: the tests judge every sequence
// variant gostore ships.
func TestEveryLifecycleVariantIsListed(t *testing.T) {
	code, _ := plugins.Lookup("gostore")
	for _, v := range code.Kernel.Variants {
		if v.Kernel != string(Name) {
			continue
		}
		found := false
		for _, m := range mutants {
			found = found || m.variant == v.Name
		}
		if !found {
			t.Errorf("gostore %s: not in the mutants table", v.Name)
		}
	}
}

// TestSingleLayoutHidesTheKernelCache: kernel-cache-no-stride is right
// while one layout is all a process sees: the second layout is the bug.
func TestSingleLayoutHidesTheKernelCache(t *testing.T) {
	s := &kind.Session{Plugin: bundled(t, "gostore"), Dir: plugintest.Dir(t)}
	g := testGeometry
	g.HeadDims = []int{64}
	suite, err := Suite(s, kind.Params{Variant: "kernel-cache-no-stride", Cases: 100, Seed: 1, Setup: kind.Setup{Backend: arena.SHM{}}}, SuiteConfig{Geometry: g, Profiles: []string{ProfileServe}})
	if err != nil {
		t.Fatal(err)
	}
	vs, err := suite.Run(context.Background())
	if err != nil || vs[0].Outcome.Failure != nil {
		t.Fatalf("one layout: err %v, failure %+v", err, vs[0].Outcome.Failure)
	}
}
