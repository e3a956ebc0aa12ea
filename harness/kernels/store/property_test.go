package store

import (
	"context"
	"strings"
	"testing"

	"github.com/kvharness/kvharness/harness/arena"
	"github.com/kvharness/kvharness/harness/internal/kindtest"
	"github.com/kvharness/kvharness/harness/internal/plugintest"
	"github.com/kvharness/kvharness/harness/kind"
	"github.com/kvharness/kvharness/harness/oracle"
	"github.com/kvharness/kvharness/harness/plugin"
	"github.com/kvharness/kvharness/harness/property"
	"github.com/kvharness/kvharness/internal/testtier"
	"github.com/kvharness/kvharness/plugins"
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

// verdicts runs the suite; an error ends the test.
func (s *testSuite) verdicts(t *testing.T) []property.Verdict[*Case, *Result] {
	t.Helper()
	vs, err := s.Run(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return vs
}

func suite(t *testing.T, name, variant string, layouts ...string) *testSuite {
	t.Helper()
	p, dir := plugintest.Start(t, name)
	spawn := func(ctx context.Context) (*plugin.Plugin, error) {
		path, err := plugin.Resolve(name)
		if err != nil {
			return nil, err
		}
		return plugin.Start(ctx, name, path, plugin.Options{Dir: dir, Variant: variant})
	}
	s := &testSuite{session: &kind.Session{Plugin: p, Dir: dir, Spawn: spawn}, Paddings: Paddings,
		Params: kind.Params{Variant: variant, Cases: 200, Seed: 1, Setup: kind.Setup{Slots: 4096, MaxCapacity: 64, Backend: arena.SHM{}}}}
	s.Layouts = kindtest.Layouts(t, 128, 64, layouts...)
	return s
}

// huntSuite is suite for a mutant hunt: outside the full suite the plugin
// runs in process, as kvharness fuzz's in-binary lane runs it (no
// process to start, no transport: a hunt is the generator's and the
// oracle's), and the full suite hunts through a real plugin process. The
// package's controls keep their processes.
func huntSuite(t *testing.T, name, variant string, layouts ...string) *testSuite {
	t.Helper()
	if testtier.Full() {
		return suite(t, name, variant, layouts...)
	}
	services, ok := plugins.Servers(name)
	if !ok {
		t.Fatalf("no bundled Go plugin %q to run in process", name)
	}
	spawn := func(context.Context) (*plugin.Plugin, error) { return plugin.InProcess(name, services), nil }
	p, _ := spawn(context.Background())
	t.Cleanup(p.Close)
	s := &testSuite{session: &kind.Session{Plugin: p, Dir: plugintest.Dir(t), Spawn: spawn}, Paddings: Paddings,
		Params: kind.Params{Variant: variant, Cases: 200, Seed: 1, Setup: kind.Setup{Slots: 4096, MaxCapacity: 64, Backend: arena.SHM{}}}}
	s.Layouts = kindtest.Layouts(t, 128, 64, layouts...)
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
		vs := suite(t, tc.plugin, "", tc.layouts...).verdicts(t)
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
	vs := s.verdicts(t)
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

// TestHangsRestartThenStop: a plugin that hangs in every store is
// killed and restarted after each hang (the run goes on) until the same
// fault has happened MaxFaults times; a hang is the plugin's fault, never
// reported as the kernel's failure.
func TestHangsRestartThenStop(t *testing.T) {
	testtier.SkipShort(t, "hung plugin processes waited out")
	vs, err := hangSuite(t, []Padding{PadNone}, 0).Run(context.Background())
	if err == nil || !strings.Contains(err.Error(), "happened 3 times") {
		t.Fatalf("err = %v, want the run stopped after 3 identical faults", err)
	}
	o := vs[0].Outcome
	if len(o.Faults) != 3 || o.Failure != nil || o.FaultCase == nil {
		t.Errorf("faults %d, failure %v, fault case %v: want 3 faults, no failure, the case recorded", len(o.Faults), o.Failure, o.FaultCase)
	}
	for _, f := range o.Faults {
		if pf, ok := plugin.AsFault(f.Fault); !ok || pf.Kind != plugin.Hang {
			t.Errorf("fault %v is not a hang", f.Fault)
		}
	}
}

// TestCrashIsAFinding: a store that panics is the kernel's bug: confirmed
// after a restart, shrunk to one row, and reported with the panic's
// message and the plugin's own frame, like a violation.
func TestCrashIsAFinding(t *testing.T) {
	for _, pad := range []Padding{PadNone, PadCount} {
		s := suite(t, "faulty", "panic", "bf16")
		s.Paddings = []Padding{pad}
		vs := s.verdicts(t)
		f := vs[0].Outcome.Failure
		if f == nil || f.Property != oracle.Crash || f.Flaky || f.NeedsHistory || len(vs[0].Outcome.Faults) != 0 {
			t.Fatalf("%s: outcome %+v; want a confirmed crash and no plugin fault", pad, vs[0].Outcome)
		}
		if f.Case.Capacity() != 1 {
			t.Errorf("%s: shrunk to %v, want one row", pad, f.Case)
		}
		cr := f.Minimal.Crash
		if cr == nil || cr.Panic == nil || !strings.Contains(cr.Panic.Message, "deliberate panic storing 1 rows") ||
			len(cr.Panic.Frames) == 0 || !strings.Contains(cr.Panic.Frames[0].Func, "faulty/kernel.misbehave") {
			t.Errorf("%s: crash %+v: want the panic's message and the plugin's frame", pad, cr)
		}
	}
}

// TestStagingWriteIsAKernelBug: a store that overwrites its input rows
// fails the staging property with the bytes it changed, shrunk like any
// failure; it is not a plugin fault.
func TestStagingWriteIsAKernelBug(t *testing.T) {
	s := suite(t, "faulty", "scribble-staging", "bf16")
	s.Paddings = []Padding{PadNone}
	vs := s.verdicts(t)
	f := vs[0].Outcome.Failure
	if f == nil || f.Property != oracle.Staging || f.Case.Capacity() != 1 {
		t.Fatalf("outcome %+v: want a staging failure on one row", vs[0].Outcome)
	}
	v := f.Minimal.Violations[0]
	if v.Kind != oracle.Staging || v.Field != "rows" || v.Row != 0 || v.Off != 0 || len(v.Got) != v.Len || v.Got[0] != 0xc1 {
		t.Errorf("violation %v (got % x): want row 0's first element, 0x7fc1 written over it", v, v.Got)
	}
}

// TestStagingTailWriteIsCaught: a store that overwrites the 64 bytes just past
// its staged rows, into staging its call does not use, fails the staging
// property on the case that did it, however small the batch: the whole
// staging region is compared after every call, not only what was staged.
func TestStagingTailWriteIsCaught(t *testing.T) {
	s := suite(t, "faulty", "scribble-tail", "bf16")
	s.Paddings = []Padding{PadNone}
	vs := s.verdicts(t)
	f := vs[0].Outcome.Failure
	if f == nil || f.Property != oracle.Staging || f.Case.Capacity() != 1 || vs[0].Outcome.Cases != 1 {
		t.Fatalf("outcome %+v: want a staging failure at the first case, shrunk to one row", vs[0].Outcome)
	}
	v := f.Minimal.Violations[0]
	if v.Kind != oracle.Staging || v.Field != "rows past the batch" || v.Off != s.Layouts[0].RowBytes() || v.Len != 64 ||
		!strings.Contains(v.Detail, "past the rows of its batch (1)") {
		t.Errorf("violation %+v: want the 64 bytes after row 0, named as past the batch", v)
	}
}

// TestSanitizerFindingJoinsItsCase: under a sanitizer, what it reports as
// a crashed process exits joins the crashing case's result, beside the
// crash, and reads as a sanitizer violation naming the kernel.
func TestSanitizerFindingJoinsItsCase(t *testing.T) {
	s := suite(t, "faulty", "panic", "bf16")
	s.Paddings = []Padding{PadNone}
	san := plugintest.FakeSanitizer(t)
	if err := s.session.Plugin.Sanitize(context.Background(), san); err != nil {
		t.Fatal(err)
	}
	vs := s.verdicts(t)
	f := vs[0].Outcome.Failure
	if f == nil || f.Property != oracle.Crash {
		t.Fatalf("outcome %+v: want the crash", vs[0].Outcome)
	}
	m := f.Minimal
	if len(m.Findings) != 1 || m.Findings[0].Kernel != "fake_store" || !m.Has(oracle.Sanitizer) {
		t.Errorf("minimal result %+v: want the sanitizer's record of the crashed process", m)
	}
	var b strings.Builder
	WriteCase(&b, vs[0].Layout, f.Case, m)
	if !strings.Contains(b.String(), "sanitizer: memcheck: Invalid __global__ write of size 4 bytes in kernel fake_store") {
		t.Errorf("report:\n%s\nwants the finding", b.String())
	}
}
