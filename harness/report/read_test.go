package report

import (
	"bytes"
	"encoding/json"
	"math"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/kvharness/kvharness/harness/check"
	"github.com/kvharness/kvharness/harness/layout"
	"github.com/kvharness/kvharness/harness/oracle"
	"github.com/kvharness/kvharness/harness/pool"
	"github.com/kvharness/kvharness/harness/property"
	"github.com/kvharness/kvharness/harness/workload"
)

func readFixture(t *testing.T) (*layout.Layout, *workload.Read, *check.Result) {
	t.Helper()
	l, _ := layout.Builtin("bf16", 128, 64)
	c := &workload.Read{K: 2,
		Keys: []workload.Key{{Slot: 1, Vec: workload.Vec{Kind: workload.VecNormal, Seed: 1}}, {Slot: 2, Vec: workload.Vec{Kind: workload.VecNormal, Seed: 2}},
			{Slot: 40, Vec: workload.Vec{Kind: workload.VecHuge, Seed: 3}}},
		Requests: []workload.ReadRequest{{Query: workload.Vec{Kind: workload.VecNormal, Seed: 9}, Tokens: []int64{1, 2}},
			{Query: workload.Vec{Kind: workload.VecZero}, Tokens: []int64{40}}}}
	g, _ := pool.Plan([]pool.Spec{{Name: "p", Layout: l, Slots: 64}}, 0)
	rc := oracle.NewReadCheck(l, g.Regions[0], 1, c, oracle.ReadOptions{})
	ref := rc.Reference(0)
	out := oracle.ReadOutput{Slots: []int64{ref[0].Slot, 40, 40, -1}, Scores: []float32{float32(ref[0].Score), 0, 0, float32(math.NaN())}}
	return l, c, &check.Result{Case: c, Violations: rc.CheckResult(out)}
}

func TestWriteReadResultShowsSets(t *testing.T) {
	_, _, res := readFixture(t)
	var b bytes.Buffer
	WriteReadResult(&b, res)
	for _, want := range []string{"request 0", "tokens [1 2]", "result: request 0 (2 tokens, k 2): rank 1: slot 40 is not in the request's list (request 1's token)",
		"expected [", "returned [", "first difference at rank 1"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("report lacks %q:\n%s", want, b.String())
		}
	}
}

func TestReadReproRoundTrip(t *testing.T) {
	l, c, res := readFixture(t)
	r := &Repro{Version: ReproVersion, Kernel: c.Kernel(), Plugin: "fusedstore", Variant: "unmasked-tail", Layout: l.JSON(),
		Slots: 64, BackgroundSeed: 1, Case: c, Found: &Found{Property: oracle.Result, Violations: res.Violations}}
	path, err := r.Save(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasSuffix(filepath.Base(path), ".json") || !strings.Contains(path, "bf16-read-result") {
		t.Errorf("repro name %s", path)
	}
	back, bl, err := LoadRepro(path)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(workload.Case(c), back.Case); diff != "" || bl.Name != "bf16" || back.Kernel != "read" {
		t.Errorf("read repro round trip (-want +got):\n%s", diff)
	}
	bad := strings.Replace(string(mustJSON(t, r)), `"k": 2`, `"k": 0`, 1)
	if _, _, err := ParseRepro([]byte(bad)); err == nil {
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
	l, _, res := readFixture(t)
	f := &property.Failure{Original: res, Minimal: res, Rerun: res, Property: res.Primary()}
	vs := []property.Verdict{{Layout: l, Label: property.ReadLabel, Seed: 1, Outcome: &property.Outcome{Cases: 3, Failure: f}}}
	var b bytes.Buffer
	h := Header{Plugin: "fusedstore", Version: "1.0.0", Variant: "unmasked-tail", Cases: 10, Slots: 64, Seed: 1}
	WriteReadTable(&b, h, vs)
	if !strings.Contains(b.String(), "result") || !strings.Contains(b.String(), "FAIL") || strings.Contains(b.String(), "padding") {
		t.Errorf("table:\n%s", b.String())
	}
	j := ReadJSON(h, vs, nil, nil)
	if j.Passed || j.Verdicts[0].Properties[oracle.Result] != "FAIL" || j.Verdicts[0].Properties[oracle.Scratch] != "ok" {
		t.Errorf("json verdict %+v", j.Verdicts[0])
	}
	b.Reset()
	WriteReadFailure(&b, Failure{Plugin: "fusedstore", Variant: "unmasked-tail", Layout: l, Verdict: vs[0], ReproPath: "x.json"})
	if !strings.Contains(b.String(), "FAIL fusedstore --variant unmasked-tail · bf16 · read · property result") {
		t.Errorf("failure:\n%s", b.String())
	}
}
