package store

import (
	"context"
	"strings"
	"testing"

	"github.com/kvharness/kvharness/harness/internal/plugintest"
	"github.com/kvharness/kvharness/harness/kind"
	"github.com/kvharness/kvharness/harness/layout"
	"github.com/kvharness/kvharness/harness/oracle"
	"github.com/kvharness/kvharness/harness/plugin"
	"github.com/kvharness/kvharness/harness/property"
)

// testSuite is a store suite's settings, as the tests vary them.
type testSuite struct {
	kind.Params
	session  *kind.Session
	Paddings []Padding
}

func (s *testSuite) Run(ctx context.Context) ([]property.Verdict[*Case, *Result], error) {
	return Suite(s.session, s.Params, s.Paddings).Run(ctx)
}

func suite(t *testing.T, name, variant string, layouts ...string) *testSuite {
	t.Helper()
	p, dir := plugintest.Start(t, name)
	s := &testSuite{session: &kind.Session{Plugin: p, Dir: dir}, Paddings: Paddings,
		Params: kind.Params{Variant: variant, Cases: 200, Seed: 1, Slots: 4096, MaxCapacity: 64}}
	for _, n := range layouts {
		l, err := layout.Builtin(n, 128, 64)
		if err != nil {
			t.Fatal(err)
		}
		s.Layouts = append(s.Layouts, l)
	}
	return s
}

func TestCorrectPluginsPass(t *testing.T) {
	for _, tc := range []struct {
		plugin  string
		layouts []string
	}{
		{"fusedstore", []string{"bf16", "fp8-paged", "fp8-rows"}},
		{"fp8store", []string{"fp8-paged", "fp8-rows"}},
	} {
		vs, err := suite(t, tc.plugin, "", tc.layouts...).Run(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		if len(vs) != len(tc.layouts)*len(Paddings) {
			t.Fatalf("%s: %d verdicts", tc.plugin, len(vs))
		}
		for _, v := range vs {
			if !v.Outcome.Passed() || v.Outcome.Cases != 200 {
				t.Errorf("%s %s/%s: %d cases, failure %+v", tc.plugin, v.Layout.Name, v.Label, v.Outcome.Cases, v.Outcome.Failure)
			}
		}
	}
}

// TestBF16ScatterShrinks is the incident: the pad-unaware scatter must fail
// under every padding convention and shrink to a one- or two-row batch.
func TestBF16ScatterShrinks(t *testing.T) {
	s := suite(t, "bf16scatter", "", "bf16")
	vs, err := s.Run(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]oracle.Kind{"count": oracle.Padding, "sink": oracle.Padding, "minus1": oracle.Guard}
	for _, v := range vs {
		o := v.Outcome
		if v.Label == "none" {
			if !o.Passed() {
				t.Errorf("no padding: %+v", o.Failure.Minimal.Violations)
			}
			continue
		}
		if o.Failure == nil || o.Failure.Flaky {
			t.Fatalf("%s: not caught (%+v)", v.Label, o)
		}
		m := o.Failure.Minimal
		if o.Failure.Property != want[v.Label] || !m.Has(want[v.Label]) {
			t.Errorf("%s: property %s, want %s", v.Label, o.Failure.Property, want[v.Label])
		}
		if c := o.Failure.Case; c.Capacity() > 2 || c.Capacity()-c.Valid < 1 {
			t.Errorf("%s: shrunk to %v, want capacity ≤ 2 with a padded row", v.Label, c)
		}
		t.Logf("%s: %v after %d shrinks, case #%d", v.Label, o.Failure.Case, o.Failure.Shrinks, o.Cases)
	}
}

// TestFaultsRestartThenStop: a plugin that panics on every store is
// restarted after each crash (the run goes on) until the same fault has
// happened MaxFaults times; it is never reported as a violation.
func TestFaultsRestartThenStop(t *testing.T) {
	s := suite(t, "faulty", "panic", "bf16")
	s.Paddings = []Padding{PadNone}
	vs, err := s.Run(context.Background())
	if err == nil || !strings.Contains(err.Error(), "happened 3 times") {
		t.Fatalf("err = %v, want the run stopped after 3 identical faults", err)
	}
	o := vs[0].Outcome
	if len(o.Faults) != 3 || o.Failure != nil || o.FaultCase == nil {
		t.Errorf("faults %d, failure %v, fault case %v: want 3 faults, no failure, the case recorded", len(o.Faults), o.Failure, o.FaultCase)
	}
	for _, f := range o.Faults {
		if pf, ok := plugin.AsFault(f.Fault); !ok || pf.Kind != plugin.Crash {
			t.Errorf("fault %v is not a crash", f.Fault)
		}
	}
}
