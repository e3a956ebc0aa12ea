package sequence

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"testing"

	"github.com/kvharness/kvharness/harness/arena"
	"github.com/kvharness/kvharness/harness/internal/plugintest"
	"github.com/kvharness/kvharness/harness/kind"
	"github.com/kvharness/kvharness/harness/plugin"
	"github.com/kvharness/kvharness/harness/property"
	"github.com/kvharness/kvharness/harness/sdk"
	"github.com/kvharness/kvharness/internal/testtier"
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
// serving row with an ownership violation that names the page's owner
// and the former owner whose row it holds and the step it left, shrunk
// to the four steps the incident needs: two requests admitted, a replay
// of both, one leaves, a replay of the other alone takes the page the
// stale slot points into.
func TestIncidentAcrossSteps(t *testing.T) {
	vs := run(t, bundled(t, "bf16scatter"), "", 200, 1, ProfileServe)
	f := vs[0].Outcome.Failure
	if f == nil {
		t.Fatal("bf16scatter passed")
	}
	v := f.Minimal.Violations[0]
	if f.Property != Ownership || v.Former == 0 || v.Former == v.Owner || v.FormerUntil < 1 || v.FormerUntil > v.Step || v.Holds == "" {
		t.Fatalf("want an ownership violation naming a former owner; got %v: %+v", f.Property, v)
	}
	if len(f.Case.Steps) > 4 {
		t.Errorf("shrunk to %d steps: %v", len(f.Case.Steps), f.Case)
	}
	t.Logf("%v\n%v", f.Case, v)
}

// mutants are gostore's lifecycle variants and the incident's stores
// (bf16scatter's pad-unaware scatter, fusedstore's ignore-count), each
// with the row that draws the sequences it needs.
var mutants = []struct {
	plugin, variant, profile string
	steps                    int // the most steps its minimal case has; 0: 4
}{
	{"gostore", "graph-last-slots", ProfileServe, 0},
	{"gostore", "late-landing", ProfileOffload, 0},
	{"gostore", "lazy-source", ProfileOffload, 0},
	{"gostore", "host-copy-released", ProfileOffload, 0},
	{"gostore", "pinned-staging-reuse", ProfileServe, 0},
	{"gostore", "first-token-back", ProfileServe, 0},
	{"gostore", "kernel-cache-no-stride", ProfileServe, 0},
	// A read must fill the cache before a page changes hands and read it
	// after: an arrival, a read, a free, a taking (an arrival or a
	// decode: no step both frees and takes a page of one side) and a
	// read, five steps at the least.
	{"gostore", "stale-read-cache", ProfileServe, 5},
	{"gostore", "transfer-resend", ProfileServe, 0},
	{"bf16scatter", "", ProfileServe, 0},
	{"fusedstore", "ignore-count", ProfileServe, 0},
}

// TestMutantsDie: every lifecycle mutant and the incident's stores die in
// 10 of 10 seeds (1 outside the full suite) on their rows, shrunk to at
// most 4 steps (stale-read-cache: 5, the least it can show in); the full
// suite runs each on both rows.
func TestMutantsDie(t *testing.T) {
	seeds := int64(1)
	if testtier.Full() {
		seeds = 10
	}
	for _, m := range mutants {
		p := bundled(t, m.plugin)
		rows := []string{m.profile}
		if testtier.Full() {
			rows = Profiles
		}
		for _, row := range rows {
			var steps []string
			for seed := int64(1); seed <= seeds; seed++ {
				f := run(t, p, m.variant, 200, seed, row)[0].Outcome.Failure
				if f == nil {
					t.Errorf("%s %q %s seed %d survived", m.plugin, m.variant, row, seed)
					continue
				}
				n := fmt.Sprint(len(f.Case.Steps))
				if f.ShrinkCut {
					n += " (shrink cut at its checks)"
				}
				steps = append(steps, n)
				if seed == 1 {
					t.Logf("%s %q: %v: %v on %v", m.plugin, m.variant, f.Property, f.Minimal.Violations[0], f.Case)
				}
				if most := max(m.steps, 4); len(f.Case.Steps) > most {
					t.Errorf("%s %q %s seed %d: shrunk to %d steps (at most %d): %v", m.plugin, m.variant, row, seed, len(f.Case.Steps), most, f.Case)
				}
			}
			t.Logf("%s %q %s: killed in %d of %d seeds, minimal steps %v", m.plugin, m.variant, row, len(steps), seeds, steps)
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
			found = found || m.plugin == "gostore" && m.variant == v.Name
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

// TestReadsBetweenSteps: the controls' read kernels (fusedstore's and
// gostore's) pass read steps; gostore's stale-read-cache dies of a
// stale-read that names the former owner whose row its cache still held,
// shrunk to a read, a free, a reuse and a read.
func TestReadsBetweenSteps(t *testing.T) {
	for _, name := range []string{"fusedstore", "gostore"} {
		p := bundled(t, name)
		sys := NewSystem(p, plugintest.Dir(t), Config{Backend: arena.SHM{}, Geometry: testGeometry, Seed: 1}, nil)
		c := &Case{Geometry: testGeometry, Steps: []Step{arrive(1, 6), read(1), share(2, 9, 1, 5), decode(1, 2), read(2, 1), op(OpFinish, 1), arrive(3, 3), read(3, 2)}}
		r, err := sys.Check(context.Background(), c)
		sys.Close(context.Background())
		if err != nil || r.Failed() || r.Reads != 3 {
			t.Fatalf("%s: err %v, reads %d, violations %v", name, err, r.Reads, r.Violations)
		}
	}
	f := run(t, bundled(t, "gostore"), "stale-read-cache", 200, 1, ProfileServe)[0].Outcome.Failure
	if f == nil {
		t.Fatal("stale-read-cache survived")
	}
	v := f.Minimal.Violations[0]
	if f.Property != StaleRead || v.Former == 0 || v.Former == v.Owner || v.Holds == "" || v.Req == 0 {
		t.Fatalf("want a stale-read naming the former owner; got %v: %+v", f.Property, v)
	}
	t.Logf("%v\n%v", f.Case, v)
}

// TestTransfersToDecode: gostore's transfer kernel moves requests to the
// decode side, where they are read and finish, and the decode pages are
// reused; transfer-resend dies of an ownership violation on a decode
// page, shrunk to at most 4 steps.
func TestTransfersToDecode(t *testing.T) {
	g := testGeometry
	g.Decode = true
	sys := NewSystem(bundled(t, "gostore"), plugintest.Dir(t), Config{Backend: arena.SHM{}, Geometry: g, Seed: 1}, nil)
	defer sys.Close(context.Background())
	c := &Case{Geometry: g, Steps: []Step{arrive(1, 6), arrive(2, 7), op(OpTransfer, 1), read(1, 2), op(OpFinish, 1),
		share(3, 5, 2, 4), op(OpTransfer, 2), op(OpTransfer, 3), read(3), op(OpAbort, 3), arrive(4, 9), op(OpTransfer, 4), read(2, 4)}}
	r, err := sys.Check(context.Background(), c)
	if err != nil {
		t.Fatal(err)
	}
	if r.Failed() || r.Steps != len(c.Steps) {
		t.Fatalf("err %v, %d steps, violations %v", err, r.Steps, r.Violations)
	}
	f := run(t, bundled(t, "gostore"), "transfer-resend", 200, 1, ProfileServe)[0].Outcome.Failure
	if f == nil {
		t.Fatal("transfer-resend survived")
	}
	v := f.Minimal.Violations[0]
	if f.Property != Ownership || v.Page < f.Case.Geometry.Pages || len(f.Case.Steps) > 4 {
		t.Fatalf("want an ownership violation on a decode page, shrunk; got %v on %v: %+v", f.Property, f.Case, v)
	}
	t.Logf("%v\n%v", f.Case, v)
}

// TestControlsPassTheIncidentsMinimalCase: the sequence the incident's
// stores shrink to (two requests admitted in one step, a replay of both,
// one leaves, the other's replay alone takes its page) is one the
// controls pass: the shrunk case is a real sequence, not an artefact.
func TestControlsPassTheIncidentsMinimalCase(t *testing.T) {
	g := testGeometry
	g.Capacities = []int{2}
	c := &Case{Geometry: g, Steps: []Step{arriving([]Arrival{{Req: 1, Tokens: 3}, {Req: 2, Tokens: 1}}), decode(1, 2), op(OpFinish, 2), decode(1)}}
	for _, name := range []string{"fusedstore", "gostore", "bf16scatter"} {
		sys := NewSystem(bundled(t, name), plugintest.Dir(t), Config{Backend: arena.SHM{}, Geometry: g, Seed: 1}, nil)
		r, err := sys.Check(context.Background(), c)
		sys.Close(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		if name == "bf16scatter" {
			if !r.Has(Ownership) || r.Violations[0].Step != 3 || r.Violations[0].Former != 2 {
				t.Errorf("bf16scatter: %v; want an ownership violation at step 3 naming r2", r.Violations)
			}
			continue
		}
		if r.Failed() || r.Steps != 4 {
			t.Errorf("%s: %d steps, %v", name, r.Steps, r.Violations)
		}
	}
}
