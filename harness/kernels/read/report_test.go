package read

import (
	"bytes"
	"encoding/json"
	"math"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/kvharness/kvharness/harness/internal/kindtest"
	"github.com/kvharness/kvharness/harness/layout"
	"github.com/kvharness/kvharness/harness/oracle"
	"github.com/kvharness/kvharness/harness/pool"
	"github.com/kvharness/kvharness/harness/property"
	"github.com/kvharness/kvharness/harness/report"
	"github.com/kvharness/kvharness/harness/workload"
)

func readFixture(t *testing.T) (*layout.Layout, *Case, *Result) {
	t.Helper()
	l, _ := layout.Builtin("bf16", 128, 64)
	c := &Case{K: 2,
		Keys: []Key{{Slot: 1, Vec: Vec{Kind: VecNormal, Seed: 1}}, {Slot: 2, Vec: Vec{Kind: VecNormal, Seed: 2}},
			{Slot: 40, Vec: Vec{Kind: VecHuge, Seed: 3}}},
		Requests: []Request{{Query: Vec{Kind: VecNormal, Seed: 9}, Tokens: []int64{1, 2}},
			{Query: Vec{Kind: VecZero}, Tokens: []int64{40}}}}
	g, _ := pool.Plan([]pool.Spec{{Name: "p", Layout: l, Slots: 64}}, 0)
	rc := NewOracle(l, g.Regions[0], 1, c, Options{})
	ref := rc.Reference(0)
	out := Output{Slots: []int64{ref[0].Slot, 40, 40, -1}, Scores: []float32{float32(ref[0].Score), 0, 0, float32(math.NaN())}}
	return l, c, &Result{Violations: rc.CheckResult(out)}
}

func TestWriteReadResultShowsSets(t *testing.T) {
	_, c, res := readFixture(t)
	var b bytes.Buffer
	WriteCase(&b, nil, c, res)
	for _, want := range []string{"request 0", "tokens [1 2]", "result: request 0 (2 tokens, k 2): rank 1: slot 40 is not in the request's list (request 1's token)",
		"expected [", "returned [", "first difference at rank 1"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("report lacks %q:\n%s", want, b.String())
		}
	}
}

func TestReadReproRoundTrip(t *testing.T) {
	l, c, res := readFixture(t)
	r := &report.Repro{Version: report.ReproVersion, Ran: report.Ran{Backend: report.BackendCPU}, Kernel: Name, Plugin: "fusedstore", Variant: "unmasked-tail", Layout: l.JSON(),
		Slots: 64, BackgroundSeed: 1, Case: c, Found: &report.Found{Property: TopK, Violations: res.Violations}}
	path, back, bl := kindtest.SavedAndLoaded(t, &Kind, r, "bf16-read-result")
	if !strings.HasSuffix(filepath.Base(path), ".json") {
		t.Errorf("repro name %s", path)
	}
	if diff := cmp.Diff(workload.Case(c), back.Case); diff != "" || bl.Name != "bf16" || back.Kernel != "read" {
		t.Errorf("read repro round trip (-want +got):\n%s", diff)
	}
	bad := strings.Replace(string(mustJSON(t, r)), `"k": 2`, `"k": 0`, 1)
	if _, _, err := report.ParseRepro([]byte(bad), Kind.DecodeRepro); err == nil {
		t.Error("a read repro with k 0 was accepted")
	}
}

func mustJSON(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestReadTableAndJSON(t *testing.T) {
	l, c, res := readFixture(t)
	f := &property.Failure[*Case, *Result]{Original: res, Minimal: res, Rerun: res, Reran: true, Case: c, Property: res.Primary()}
	vs := []property.Verdict[*Case, *Result]{{Layout: l, Label: Label, Seed: 1, Outcome: &property.Outcome[*Case, *Result]{Cases: 3, Failure: f}}}
	h := report.Header{Ran: report.Ran{Backend: report.BackendCPU}, Plugin: "fusedstore", Version: "1.0.0", Variant: "unmasked-tail", Cases: 10, Slots: 64, Seed: 1, Backend: "cpu",
		JSON: report.Object{{Key: "slots", Value: 64}}}
	run, err := report.Build(Schema, h, vs, nil)
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	report.WriteTable(&b, run)
	if !strings.Contains(b.String(), "result") || !strings.Contains(b.String(), "FAIL") || strings.Contains(b.String(), "padding") {
		t.Errorf("table:\n%s", b.String())
	}
	b.Reset()
	if err := report.WriteJSON(&b, run); err != nil {
		t.Fatal(err)
	}
	var j struct {
		Passed   bool
		Verdicts []struct{ Properties map[oracle.Kind]string }
	}
	if err := json.Unmarshal(b.Bytes(), &j); err != nil {
		t.Fatal(err)
	}
	if j.Passed || j.Verdicts[0].Properties[TopK] != "FAIL" || j.Verdicts[0].Properties[Scratch] != "ok" {
		t.Errorf("json verdict %+v", j.Verdicts[0])
	}
	b.Reset()
	report.WriteFailure(&b, run.Rows[0].Failure)
	if !strings.Contains(b.String(), "FAIL fusedstore --variant unmasked-tail · bf16 · read · property result") {
		t.Errorf("failure:\n%s", b.String())
	}
}
