package sequence

import (
	"context"
	"fmt"
	"math/rand"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kvharness/kvharness/harness/arena"
	"github.com/kvharness/kvharness/harness/internal/kindtest"
	"github.com/kvharness/kvharness/harness/internal/plugintest"
	"github.com/kvharness/kvharness/harness/kind"
	"github.com/kvharness/kvharness/harness/plugin"
	"github.com/kvharness/kvharness/harness/property"
	"github.com/kvharness/kvharness/harness/report"
	"github.com/kvharness/kvharness/internal/testtier"
)

// recordLoop runs the Python scheduler loop (plugins/python/tests/
// schedloop.py) with kvharness_sdk.trace hooked onto it, and returns the
// trace it wrote; it skips without a python that has the SDK's modules.
func recordLoop(t *testing.T, steps, seed string) string {
	t.Helper()
	py, err := plugin.Python("")
	if err != nil {
		t.Skipf("no python for the SDK: %v", err)
	}
	out := filepath.Join(t.TempDir(), "loop.jsonl")
	cmd := exec.Command(py, "-B", filepath.Join("..", "..", "..", "plugins", "python", "tests", "schedloop.py"), out, steps, seed)
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("schedloop: %v\n%s", err, b)
	}
	return out
}

func traceSuite(t *testing.T, p *plugin.Plugin, tr *Case, cases int) []property.Verdict[*Case, *Result] {
	t.Helper()
	s := &kind.Session{Plugin: p, Dir: plugintest.Dir(t)}
	suite, err := Suite(s, kind.Params{Cases: cases, Seed: 1, StopAtFirst: true, Setup: kind.Setup{Backend: arena.SHM{}}}, SuiteConfig{Trace: tr})
	if err != nil {
		t.Fatal(err)
	}
	vs, err := suite.Run(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return vs
}

// TestTraceFromSchedulerLoop: a trace recorded from the Python loop
// replays against fusedstore (it passes, and so do the sequences drawn
// from it) and fails bf16scatter as recorded (the row's first case is the
// trace itself), shrunk to the four steps the incident needs. fusedstore
// replays 100 sequences of the trace's row in the full suite, 6 outside
// (the trace and five drawn from it, each of about 200 steps).
func TestTraceFromSchedulerLoop(t *testing.T) {
	controls := 6
	if testtier.Full() {
		controls = 100
	}
	tr, err := ReadTrace(recordLoop(t, "200", "1"))
	if err != nil {
		t.Fatal(err)
	}
	if len(tr.Steps) != 200 {
		t.Fatalf("the trace holds %d steps, want 200", len(tr.Steps))
	}
	gen := &Gen{Geometry: tr.Geometry, Trace: tr}
	if first := gen.Draw(rand.New(rand.NewSource(1))); first.String() != tr.String() {
		t.Fatalf("the first draw is not the trace: %v", first)
	}
	if f := traceSuite(t, bundled(t, "fusedstore"), tr, controls)[0].Outcome.Failure; f != nil {
		t.Fatalf("fusedstore fails the trace row: %v %v", f.Case, f.Minimal.Violations)
	}
	out := traceSuite(t, bundled(t, "bf16scatter"), tr, 100)[0].Outcome
	f := out.Failure
	if f == nil || out.Cases != 1 {
		t.Fatalf("bf16scatter: the trace itself passes (failure %v after %d cases)", f != nil, out.Cases)
	}
	if f.Property != Ownership || len(f.Case.Steps) > 4 {
		t.Errorf("bf16scatter: %v, shrunk to %d steps", f.Property, len(f.Case.Steps))
	}
	t.Logf("bf16scatter on the trace: %s, shrunk to %v", f.Property, f.Case)
}

// TestTraceRefusals: a trace kvharness cannot replay is a one-line error
// naming the line and the fix.
func TestTraceRefusals(t *testing.T) {
	head := `{"kvharness_trace":1,"geometry":{"head_dims":[64],"page_size":4,"pages":8,"capacities":[1,2]}}` + "\n"
	for _, c := range []struct{ data, want string }{
		{"", "empty"},
		{`{"kvharness_trace":2,"geometry":{}}`, "version 1"},
		{`{"geometry":{}}`, "kvharness_trace 0"},
		{head + `{"op":"decode","batch":[1]}`, "not resident"},
		{head + `{"op":"arrive","req":1,"tokens":3,"colour":"red"}`, `line 2: json: unknown field "colour"`},
		{head + `{"op":"arrive","req":1,"tokens":3}` + "\n" + `{"op":"decode","batch":[1],"capacity":2}`, "capacity 2"},
		{head + `{"op":"arrive","req":1,"tokens":300}`, "free pages"},
	} {
		_, err := ParseTrace([]byte(c.data))
		if err == nil || !strings.Contains(err.Error(), c.want) || strings.Contains(err.Error(), "\n") {
			t.Errorf("%q: %v; want one line containing %q", c.data, err, c.want)
		}
	}
}

// TestReproReplaysTheSequence: a failing row's repro file holds the
// whole sequence and its geometry; read back, it fails bf16scatter again
// and passes fusedstore.
func TestReproReplaysTheSequence(t *testing.T) {
	vs := run(t, bundled(t, "bf16scatter"), "", 200, 1, ProfileServe)
	r, err := Schema.Repro(report.Header{Ran: report.Ran{Backend: report.BackendCPU}, Plugin: "bf16scatter", PluginArg: "bf16scatter", Seed: 1}, vs[0])
	if err != nil {
		t.Fatal(err)
	}
	_, back, _ := kindtest.SavedAndLoaded(t, &Kind, r, "bf16scatter-bf16-serve-ownership-")
	c := back.Case.(*Case)
	if c.String() != vs[0].Outcome.Failure.Case.String() {
		t.Fatalf("read back %v, want %v", c, vs[0].Outcome.Failure.Case)
	}
	kindtest.Replays(t, map[string]bool{"bf16scatter": true, "fusedstore": false}, Ownership, func(name string) (*Result, error) {
		sys := NewSystem(bundled(t, name), plugintest.Dir(t), Config{Backend: arena.SHM{}, Geometry: c.Geometry, Seed: back.BackgroundSeed}, nil)
		defer sys.Close(context.Background())
		return sys.Check(context.Background(), c)
	})
}

// TestTraceReadsAndTransfers: a trace with reads and a decode side (as
// Recorder(decode_side=True) writes it) parses into the sequence it
// recorded, and a transfer in a trace without a decode side is refused.
func TestTraceReadsAndTransfers(t *testing.T) {
	head := `{"kvharness_trace":1,"geometry":{"head_dims":[64],"page_size":4,"pages":16,"capacities":[1,2,4]%s}}` + "\n"
	steps := `{"op":"arrive","req":1,"tokens":5}
{"op":"arrive","req":2,"tokens":3}
{"op":"read","batch":[2,1]}
{"op":"transfer","req":1}
{"op":"read","batch":[1]}
{"op":"finish","req":1}
`
	c, err := ParseTrace([]byte(fmt.Sprintf(head, `,"decode":true`) + steps))
	if err != nil {
		t.Fatal(err)
	}
	if !c.Geometry.Decode || len(c.Steps) != 6 || c.Steps[3].Op != OpTransfer || c.Steps[2].Op != OpRead {
		t.Fatalf("%+v", c)
	}
	if _, err := ParseTrace([]byte(fmt.Sprintf(head, "") + steps)); err == nil || !strings.Contains(err.Error(), "decode side") {
		t.Fatalf("a transfer without a decode side: %v", err)
	}
}
