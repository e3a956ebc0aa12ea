package load

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/kvharness/kvharness/harness/arena"
	"github.com/kvharness/kvharness/harness/internal/golden"
	"github.com/kvharness/kvharness/harness/internal/kindtest"
	"github.com/kvharness/kvharness/harness/internal/plugintest"
	"github.com/kvharness/kvharness/harness/property"
	"github.com/kvharness/kvharness/harness/report"
)

// header is a report header of a test run.
func header(variant string) report.Header {
	g := testGeometry()
	return report.Header{Ran: report.Ran{Backend: report.BackendCPU}, Plugin: "layerload", Version: "1.0.0", Variant: variant, PluginArg: "layerload", Cases: 10, Seed: 1,
		Backend: "cpu", JSON: report.Object{{Key: "geometry", Value: g}}, About: g.String()}
}

// runReport is the report of a mutant's suite, 10 cases a row, seed 1.
func runReport(t *testing.T, variant string) (*report.Run, []property.Verdict[*Case, *Result]) {
	t.Helper()
	vs := run(t, inProcess(), variant, arena.SHM{}, 10, 1, true)
	r, err := report.Build(Schema, header(variant), vs, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range r.Failures() {
		f.ReproPath = "x.json"
	}
	return r, vs
}

// TestLoadReportGolden: the text a check prints for the incident's bug
// (the missing index-K gate) and for a write after read, table and
// failure, byte for byte.
func TestLoadReportGolden(t *testing.T) {
	for _, v := range []string{"indexk-gate-missing", "load-overwrites-reader", "counter"} {
		r, _ := runReport(t, v)
		var b bytes.Buffer
		report.WriteText(&b, r)
		golden.Check(t, fmt.Sprintf("testdata/check-%s.stdout", v), b.Bytes())
	}
}

// TestLoadReproRoundTrips: a saved failure loads back as the same case,
// and replaying it fails the same property against the mutant, nothing
// against the correct plugin.
func TestLoadReproRoundTrips(t *testing.T) {
	_, vs := runReport(t, "gate-previous-layer")
	v := vs[len(vs)-1]
	r, err := repro(header("gate-previous-layer"), v)
	if err != nil {
		t.Fatal(err)
	}
	_, back, l := kindtest.SavedAndLoaded(t, &Kind, r, "layerload-gate-previous-layer-bf16-load-stale-read-")
	if diff := cmp.Diff(r.Case, back.Case); diff != "" || back.Kernel != Name || l.Name != "bf16" || back.Found.Property != ReadEarly {
		t.Fatalf("loaded %+v (layout %s); case diff:\n%s", back, l.Name, diff)
	}
	kindtest.Replays(t, map[string]bool{"gate-previous-layer": true, "": false}, ReadEarly, func(variant string) (*Result, error) {
		return checkOne(t, inProcess(), variant, arena.SHM{}, back.Case.(*Case)), nil
	})
}

// TestLoadJSON: a JSON failure carries the case, the violations with
// their items and edges, and the gates.
func TestLoadJSON(t *testing.T) {
	r, _ := runReport(t, "done-on-failure")
	var buf bytes.Buffer
	if err := report.WriteJSON(&buf, r); err != nil {
		t.Fatal(err)
	}
	var back struct {
		Passed   bool
		Verdicts []struct {
			Profile    string
			Properties map[string]string
			Failure    *struct {
				Property   string
				Violations []Violation
				Gates      []GateAnswer
			}
		}
	}
	if err := json.Unmarshal(buf.Bytes(), &back); err != nil {
		t.Fatal(err)
	}
	last := back.Verdicts[len(back.Verdicts)-1]
	if back.Passed || last.Profile != ProfileFail || last.Failure == nil || last.Properties[string(FailedDone)] != "FAIL" {
		t.Fatalf("JSON report:\n%s", buf.Bytes())
	}
	if vs := last.Failure.Violations; len(vs) == 0 || vs[0].Kind != FailedDone || vs[0].Item == nil || len(last.Failure.Gates) == 0 {
		t.Errorf("failure %+v", last.Failure)
	}
}

// TestOtherRefusals: requests the SDK must refuse come back as refusals
// naming the field, not as kernel failures.
func TestOtherRefusals(t *testing.T) {
	p := inProcess()
	sys := NewSystem(p, plugintest.Dir(t), Config{Backend: arena.SHM{}, Seed: 1, Geometry: testGeometry()}, nil)
	tg, err := sys.Target(context.Background(), testGeometry())
	if err != nil {
		t.Fatal(err)
	}
	defer sys.Close(context.Background())
	c := validCase()
	for want, edit := range map[string]func(*Case, *slots){
		"order":         func(c *Case, _ *slots) { c.Order = []string{"kv", "kv"} },
		"probe_offsets": func(_ *Case, s *slots) { s.probes = s.probes[1:] },
		"outside staging": func(_ *Case, s *slots) {
			s.probes[0] = 1 << 40
		},
	} {
		x := c.Clone()
		s := tg.slots(x)
		edit(x, &s)
		_, err := Load(context.Background(), p, tg.request(x, s))
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v", want, err)
		}
	}
}
