package store

import (
	"context"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/kvharness/kvharness/harness/arena"
	"github.com/kvharness/kvharness/harness/internal/kindtest"
	"github.com/kvharness/kvharness/harness/internal/plugintest"
	"github.com/kvharness/kvharness/harness/kind"
	"github.com/kvharness/kvharness/harness/plugin"
	"github.com/kvharness/kvharness/harness/property"
	"github.com/kvharness/kvharness/harness/shard"
	"github.com/kvharness/kvharness/internal/testtier"
)

// spawner starts more processes of a bundled plugin, closed with the test.
func spawner(t *testing.T, name string) func(context.Context) (*plugin.Plugin, error) {
	return func(context.Context) (*plugin.Plugin, error) {
		p, _ := plugintest.Start(t, name)
		return p, nil
	}
}

// serialRun is the suite of bundled plugin name on bf16 and fp8-paged
// (bf16scatter's on its one layout: rows failing and passing), cases a
// row, and its verdicts run one row after another: what the runs on
// several jobs are held to.
func serialRun(t *testing.T, name string, cases int) (*testSuite, []property.Verdict[*Case, *Result]) {
	t.Helper()
	serial := suite(t, name, "", "bf16", "fp8-paged")
	serial.Cases = cases
	if name == "bf16scatter" {
		serial.Layouts = serial.Layouts[:1]
	}
	return serial, serial.verdicts(t)
}

// onJobs is a copy of s that runs its rows on n jobs, the processes
// beyond s's own spawned from bundled plugin name.
func onJobs(t *testing.T, s *testSuite, name string, n int) *testSuite {
	jobs := *s
	jobs.Jobs, jobs.session = n, &kind.Session{Plugin: s.session.Plugin, Dir: s.session.Dir, Spawn: spawner(t, name)}
	return &jobs
}

// hangSuite is a suite of faulty's hang variant on bf16 under paddings,
// on n jobs: every store hangs past a 300 ms call timeout, and the run
// must stop after 3 identical faults.
func hangSuite(t *testing.T, paddings []Padding, n int) *testSuite {
	t.Helper()
	dir := plugintest.Dir(t)
	path, err := plugin.Resolve("faulty")
	if err != nil {
		t.Fatal(err)
	}
	start := func(ctx context.Context) (*plugin.Plugin, error) {
		p, err := plugin.Start(ctx, "faulty", path, plugin.Options{Dir: dir, Variant: "hang", CallTimeout: 300 * time.Millisecond})
		if err == nil {
			t.Cleanup(p.Close)
		}
		return p, err
	}
	p, err := start(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return &testSuite{session: &kind.Session{Plugin: p, Dir: dir, Spawn: start}, Paddings: paddings,
		Params: kind.Params{Variant: "hang", Cases: 20, Seed: 1, Setup: kind.Setup{Slots: 4096, MaxCapacity: 8, Backend: arena.SHM{}}, Layouts: kindtest.Layouts(t, 128, 64, "bf16"), Jobs: n}}
}

// summary is what a verdict says, without timings.
type summary struct {
	Layout, Label string
	Seed          int64
	Cases         int
	Failed        bool
	Property      string
}

func summarize(vs []property.Verdict[*Case, *Result]) []summary {
	var out []summary
	for _, v := range vs {
		s := summary{Layout: v.Layout.Name, Label: v.Label, Seed: v.Seed, Cases: v.Outcome.Cases, Failed: v.Outcome.Failure != nil}
		if f := v.Outcome.Failure; f != nil {
			s.Property = string(f.Property)
		}
		out = append(out, s)
	}
	return out
}

// TestJobsMatchSerial: combinations run side by side on three plugin
// processes give the verdicts of a serial run, in the same order, for a
// correct plugin and for one that fails some combinations.
func TestJobsMatchSerial(t *testing.T) {
	testtier.SkipShort(t, "three plugin processes side by side")
	for _, name := range []string{"fusedstore", "bf16scatter"} {
		serial, want := serialRun(t, name, 60)
		got := onJobs(t, serial, name, 3).verdicts(t)
		if !reflect.DeepEqual(summarize(got), summarize(want)) {
			t.Errorf("%s with 3 jobs:\n%+v\nserial:\n%+v", name, summarize(got), summarize(want))
		}
	}
}

// TestJobsStopAtFault: a fault in one job (a hang: a crash is a finding,
// not a fault) stops the run and is the error returned; runs that only
// stopped for it are not reported as verdicts.
func TestJobsStopAtFault(t *testing.T) {
	testtier.SkipShort(t, "three plugin processes side by side")
	vs, err := hangSuite(t, Paddings, 4).Run(context.Background())
	if err == nil || !strings.Contains(err.Error(), "happened 3 times") {
		t.Fatalf("err = %v; want the run stopped after 3 identical faults", err)
	}
	if len(vs) == 0 {
		t.Fatal("no verdict for the combination that faulted")
	}
	for _, v := range vs {
		if v.Outcome.Fault == nil || strings.Contains(v.Outcome.Fault.Error(), "context canceled") {
			t.Errorf("%s/%s: fault %v; want only combinations that faulted themselves", v.Layout.Name, v.Label, v.Outcome.Fault)
		}
	}
}

// TestJobsStopLikeSerial: when a later combination stops the run (fp8store
// has no bf16 kernel), the earlier ones still finish, as they would in a
// serial run, and the error is the same; the plugins a job spawned are
// closed with it.
func TestJobsStopLikeSerial(t *testing.T) {
	serial := suite(t, "fp8store", "", "fp8-paged", "bf16")
	serial.Cases = 40
	want, werr := serial.Run(context.Background())
	if werr == nil || len(want) != 4 {
		t.Fatalf("serial run: %d verdicts, err %v; want the 4 fp8-paged ones and bf16's error", len(want), werr)
	}
	jobs := *serial
	var spawned []*plugin.Plugin
	jobs.Jobs = 5
	jobs.session = &kind.Session{Plugin: serial.session.Plugin, Dir: serial.session.Dir}
	jobs.session.Spawn = func(ctx context.Context) (*plugin.Plugin, error) {
		p, err := spawner(t, "fp8store")(ctx)
		spawned = append(spawned, p)
		return p, err
	}
	got, gerr := jobs.Run(context.Background())
	if gerr == nil || gerr.Error() != werr.Error() {
		t.Errorf("5 jobs: err %v; want the serial run's %v", gerr, werr)
	}
	if !reflect.DeepEqual(summarize(got), summarize(want)) {
		t.Errorf("5 jobs:\n%+v\nserial:\n%+v", summarize(got), summarize(want))
	}
	for _, v := range got {
		if v.Outcome.Fault != nil {
			t.Errorf("%s/%s: fault %v; a stop elsewhere must not show as a fault here", v.Layout.Name, v.Label, v.Outcome.Fault)
		}
	}
	for _, p := range spawned {
		if _, err := p.Describe(context.Background(), plugin.Query{}); err == nil {
			t.Errorf("a spawned plugin still answers after the run")
		}
	}
}

// TestShardsJoinToWhole: the three shards of a suite, run on three jobs
// each, check between them every row of the serial run once, each with
// its seed, cases and verdict; no shard repeats another's row.
func TestShardsJoinToWhole(t *testing.T) {
	testtier.SkipShort(t, "the whole suite and three shards of it")
	for _, name := range []string{"fusedstore", "bf16scatter"} {
		serial, whole := serialRun(t, name, 40)
		var union []summary
		for i := 1; i <= 3; i++ {
			part := onJobs(t, serial, name, 3)
			part.Shard = shard.Spec{Index: i, Count: 3}
			vs := part.verdicts(t)
			if len(vs) == 0 || len(vs) == len(whole) {
				t.Errorf("%s shard %d/3: %d of %d rows", name, i, len(vs), len(whole))
			}
			union = append(union, summarize(vs)...)
		}
		byRow := func(a, b summary) int { return strings.Compare(a.Layout+"/"+a.Label, b.Layout+"/"+b.Label) }
		want := summarize(whole)
		slices.SortFunc(union, byRow)
		slices.SortFunc(want, byRow)
		if !reflect.DeepEqual(union, want) {
			t.Errorf("%s: the shards' rows\n%+v\nthe whole run's\n%+v", name, union, want)
		}
	}
}
