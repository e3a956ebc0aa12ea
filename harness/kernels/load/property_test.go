package load

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
	"text/tabwriter"
	"time"

	"github.com/kvharness/kvharness/harness/arena"
	"github.com/kvharness/kvharness/harness/internal/plugintest"
	"github.com/kvharness/kvharness/harness/kind"
	"github.com/kvharness/kvharness/harness/oracle"
	"github.com/kvharness/kvharness/harness/plugin"
	"github.com/kvharness/kvharness/harness/property"
	"github.com/kvharness/kvharness/harness/sdk"
	layerload "github.com/kvharness/kvharness/plugins/layerload/kernel"
)

// The tests run the layerload plugin in process (the SDK's server linked
// in, no gRPC) unless they say otherwise; TestLoadOutOfProcess runs the
// binary. KVHARNESS_LONG=1 turns on the long campaigns: every mutant
// under ten seeds, the controls for KVHARNESS_LOAD_CASES cases (default
// 10,000 in all).

func inProcess() *plugin.Plugin {
	return plugin.InProcess("layerload", sdk.Services(layerload.Plugin))
}

// testPageSize keeps CPU cases small; the suite's pages are otherwise
// the check flags' (64 tokens).
const testPageSize = 16

// run runs the load suite: cases per row, a seed, stopping at the first
// failing row when stop is set.
func run(t testing.TB, p *plugin.Plugin, variant string, backend arena.Backend, cases int, seed int64, stop bool, profiles ...string) []property.Verdict[*Case, *Result] {
	t.Helper()
	d, err := p.Describe(context.Background(), plugin.Query{Variant: variant})
	if err != nil {
		t.Fatal(err)
	}
	s := &kind.Session{Plugin: p, Dir: plugintest.Dir(t), Desc: d}
	params := kind.Params{Variant: variant, Cases: cases, Seed: seed, Setup: kind.Setup{PageSize: testPageSize, HeadDim: 128, Backend: backend, Far: true}, StopAtFirst: stop}
	// The edges row reaches far as a check's does, where it can (the
	// sparse run directory; on a GPU, a plugin that maps sparse arenas).
	suite, err := Suite(s, params, SuiteConfig{Profiles: profiles, Far: Reaches(params, s) == ""})
	if err != nil {
		t.Fatal(err)
	}
	vs, err := suite.Run(context.Background())
	if err != nil {
		t.Fatalf("%s seed %d: %v", variant, seed, err)
	}
	return vs
}

func long() bool { return os.Getenv("KVHARNESS_LONG") != "" && !testing.Short() }

// controls are the correct variants of layerload.
var controls = []string{"", "counter", "staged"}

// mutants are the rest, with the row each must die in.
var mutants = map[string]string{
	"indexk-gate-missing":    ProfileLoad,
	"wait-before-record":     ProfileLoad,
	"record-before-copies":   ProfileLoad,
	"record-wrong-stream":    ProfileLoad,
	"gate-previous-layer":    ProfileLoad,
	"ring-reuse":             ProfileLoad,
	"counter-global-id":      ProfileLoad,
	"done-on-failure":        ProfileFail,
	"store-no-join":          ProfileReuse,
	"store-no-fork":          ProfileReuse,
	"load-overwrites-reader": ProfileReuse,
	"offset-int32":           ProfileEdges,
}

// TestEveryVariantIsListed: the tests judge every variant layerload
// ships, as a control or as a mutant with its row.
func TestEveryVariantIsListed(t *testing.T) {
	for _, v := range layerload.Plugin.Variants {
		_, isMutant := mutants[v.Name]
		isControl := false
		for _, c := range controls {
			isControl = isControl || c == v.Name
		}
		if isMutant == isControl || isControl != v.Correct {
			t.Errorf("variant %s (correct %v): control %v, mutant %v", v.Name, v.Correct, isControl, isMutant)
		}
	}
}

// TestControlsPass: every correct variant passes every row; in the long
// run, 10,000 cases each (KVHARNESS_LOAD_CASES overrides the total).
func TestControlsPass(t *testing.T) {
	total := 100 * len(Profiles)
	if testing.Short() {
		total = 25 * len(Profiles)
	}
	if long() {
		total = 10000
		if n, err := strconv.Atoi(os.Getenv("KVHARNESS_LOAD_CASES")); err == nil && n > 0 {
			total = n
		}
	}
	passesControls(t, "", inProcess, arena.SHM{}, total/len(Profiles))
}

// passesControls runs every control variant, perRow cases a row, each on
// a plugin start starts, on backend: every row
// must pass. where starts the messages ("GPU " or "").
func passesControls(t *testing.T, where string, start func() *plugin.Plugin, backend arena.Backend, perRow int) {
	t.Helper()
	for _, v := range controls {
		began := time.Now()
		vs := run(t, start(), v, backend, perRow, 1, false)
		n := 0
		for _, vd := range vs {
			n += vd.Outcome.Cases
			if !vd.Outcome.Passed() {
				t.Errorf("%scontrol %q row %s: %s", where, v, vd.Label, failureLine(vd))
			}
		}
		t.Logf("%scontrol %-8q passed %d cases (%d per row × %d rows) in %v", where, v, n, perRow, len(vs),
			time.Since(began).Round(time.Millisecond))
	}
}

func failureLine(v property.Verdict[*Case, *Result]) string {
	f := v.Outcome.Failure
	if f == nil {
		return fmt.Sprintf("fault %v", v.Outcome.Fault)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%s at case %d: %v", f.Property, v.Outcome.Cases, f.Case)
	for i, x := range f.Minimal.Violations {
		if i == 3 {
			break
		}
		fmt.Fprintf(&b, "\n    %v", x)
	}
	return b.String()
}

// kill is how a mutant died under one seed.
type kill struct {
	seed     int64
	row      string
	cases    int // the row's case that first failed
	property string
	shrinks  int
	minimal  *Case
	took     time.Duration
}

// hunt runs a mutant's suite with cases per row, stopping at the first
// failing row, and checks the kill: confirmed, in its row, at or before
// the budget, shrunk to a case no shrink of which still fails.
func hunt(t *testing.T, p *plugin.Plugin, backend arena.Backend, variant string, seed int64, cases int) (kill, bool) {
	t.Helper()
	start := time.Now()
	vs := run(t, p, variant, backend, cases, seed, true)
	v := vs[len(vs)-1]
	f := v.Outcome.Failure
	if f == nil {
		t.Errorf("%s seed %d survived %d cases per row", variant, seed, cases)
		return kill{}, false
	}
	k := kill{seed: seed, row: v.Label, cases: v.Outcome.Cases, property: string(f.Property), shrinks: f.Shrinks, minimal: f.Case,
		took: time.Since(start)}
	switch {
	case f.Flaky || f.Reruns != 1 || !f.Rerun.Has(f.Property):
		t.Errorf("%s seed %d: the kill did not repeat on its first re-run (flaky %v, %d re-runs): the schedule is not deterministic: %v",
			variant, seed, f.Flaky, f.Reruns, f.Case)
	case v.Label != mutants[variant]:
		t.Errorf("%s seed %d: killed in row %s, want %s: %s", variant, seed, v.Label, mutants[variant], failureLine(v))
	case v.Outcome.Cases > cases:
		t.Errorf("%s seed %d: killed at case %d of a budget of %d", variant, seed, v.Outcome.Cases, cases)
	}
	minimal(t, p, backend, variant, f.Case, f.Property)
	return k, true
}

// minimal checks that no shrink of c still fails property: what the
// shrinker stopped at is a minimal schedule, not just where it gave up.
func minimal(t *testing.T, p *plugin.Plugin, backend arena.Backend, variant string, c *Case, property oracle.Kind) {
	t.Helper()
	sys := NewSystem(p, plugintest.Dir(t), Config{Variant: variant, Seed: 1, Backend: backend, Geometry: c.Geometry}, nil)
	defer sys.Close(context.Background())
	for _, x := range Shrink(c) {
		r, err := sys.Check(context.Background(), x)
		if err != nil {
			t.Fatal(err)
		}
		if r.Has(property) {
			t.Errorf("%s: %v is not minimal: %v still fails %s", variant, c, x, property)
			return
		}
	}
}

// TestMutantsKilledEverySeed: every mutant dies in its row within ten
// cases, confirmed and shrunk to a minimal schedule, under two seeds (ten
// in the long run), and the table of kills is logged.
func TestMutantsKilledEverySeed(t *testing.T) {
	seeds := 2
	switch {
	case testing.Short():
		seeds = 1
	case long():
		seeds = 10
	}
	killTable(t, inProcess, arena.SHM{}, seeds)
}

// killTable hunts every mutant under seeds seeds and logs the kills.
func killTable(t *testing.T, start func() *plugin.Plugin, backend arena.Backend, seeds int) {
	var table strings.Builder
	tw := tabwriter.NewWriter(&table, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "mutant\tkilled\trow\tcase (max)\tproperties\tshrinks (max)\tminimal case (last seed)\ttime (max)")
	for _, m := range layerload.Plugin.Variants {
		if m.Correct {
			continue
		}
		var ks []kill
		p := start() // one process per mutant, as kvharness mutants runs them
		for seed := range int64(seeds) {
			if k, ok := hunt(t, p, backend, m.Name, 1+seed*7919, 10); ok {
				ks = append(ks, k)
			}
		}
		if len(ks) == 0 {
			continue
		}
		maxCase, maxShrinks, maxTook, props := 0, 0, time.Duration(0), map[string]int{}
		for _, k := range ks {
			maxCase, maxShrinks, maxTook = max(maxCase, k.cases), max(maxShrinks, k.shrinks), max(maxTook, k.took)
			props[k.property]++
		}
		fmt.Fprintf(tw, "%s\t%d/%d\t%s\t%d\t%v\t%d\t%v\t%v\n", m.Name, len(ks), seeds, ks[0].row, maxCase, props, maxShrinks,
			ks[len(ks)-1].minimal, maxTook.Round(time.Millisecond))
	}
	tw.Flush()
	t.Logf("layerload mutants, %d seeds each, 10 cases per row:\n%s", seeds, table.String())
}
