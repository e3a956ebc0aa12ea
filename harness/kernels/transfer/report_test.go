package transfer

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/kvharness/kvharness/harness/arena"
	"github.com/kvharness/kvharness/harness/internal/kindtest"
	"github.com/kvharness/kvharness/harness/pd"
	"github.com/kvharness/kvharness/harness/plugin"
	"github.com/kvharness/kvharness/harness/property"
	"github.com/kvharness/kvharness/harness/report"
	"github.com/kvharness/kvharness/harness/rundir"
	"github.com/kvharness/kvharness/harness/sdk"
	pdtransfer "github.com/kvharness/kvharness/plugins/pdtransfer/kernel"
)

// killed runs the transfer suite against a pdtransfer mutant and returns
// its failing verdict.
func killed(t *testing.T, variant string) (property.Verdict[*Case, *Result], *rundir.Dir) {
	t.Helper()
	t.Setenv("KVHARNESS_RUNTIME_DIR", t.TempDir())
	s := transferSuite(t, plugin.InProcess("pdtransfer", sdk.Services(pdtransfer.Plugin)), variant, 20)
	s.StopAtFirst = true
	vs, err := s.Run(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	v := vs[len(vs)-1]
	if v.Outcome.Failure == nil {
		t.Fatalf("%s survived", variant)
	}
	return v, s.session.Dir
}

// header is a report header of a killing run.
func header(variant string) report.Header {
	g := pd.DefaultGeometry(2, 40)
	return report.Header{Ran: report.Ran{Backend: report.BackendCPU}, Plugin: "pdtransfer", Version: "1.0.0", Variant: variant, PluginArg: "pdtransfer", Cases: 20, Seed: 1,
		Backend: "cpu", JSON: report.Object{{Key: "geometry", Value: g}}, About: g.String()}
}

// TestTransferReproRoundTrips: a saved transfer failure loads back as the
// same case, and replaying it against the same mutant fails the same
// property, against the correct plugin not at all.
func TestTransferReproRoundTrips(t *testing.T) {
	v, dir := killed(t, "legacy-page-map")
	r, err := repro(header("legacy-page-map"), v)
	if err != nil {
		t.Fatal(err)
	}
	_, back, l := kindtest.SavedAndLoaded(t, &Kind, r, "pdtransfer-legacy-page-map-", "-transfer-coverage-")
	first := back.Case.(*Case).Geometry.Buffers[0].Layout
	if diff := cmp.Diff(r.Case, back.Case); diff != "" || back.Kernel != "transfer" || l.Name != first || back.Found.Property != Coverage {
		t.Fatalf("loaded %+v (layout %s); case diff:\n%s", back, l.Name, diff)
	}
	kindtest.Replays(t, map[string]bool{"legacy-page-map": true, "": false}, Coverage, func(variant string) (*Result, error) {
		sys := NewSystem(plugin.InProcess("pdtransfer", sdk.Services(pdtransfer.Plugin)), dir,
			Config{Backend: arena.SHM{}, Variant: variant, Seed: back.BackgroundSeed}, nil)
		defer sys.Close(context.Background())
		return sys.Check(context.Background(), back.Case.(*Case))
	})
}

// run is the report of one killing verdict.
func run(t *testing.T, v property.Verdict[*Case, *Result], variant string) *report.Run {
	t.Helper()
	r, err := report.Build(Schema, header(variant), []property.Verdict[*Case, *Result]{v}, nil)
	if err != nil {
		t.Fatal(err)
	}
	r.Rows[0].Failure.ReproPath = "x.json"
	return r
}

func TestWriteTransferFailure(t *testing.T) {
	v, _ := killed(t, "skip-buffer")
	var b bytes.Buffer
	report.WriteFailure(&b, run(t, v, "skip-buffer").Rows[0].Failure)
	out := b.String()
	for _, want := range []string{
		"FAIL pdtransfer --variant skip-buffer · transfer · profile mixed · property coverage",
		"coverage: room 0 (id 0) buffer L0.indexk page 0", "no descriptor names buffer L0.indexk",
		"page: room 0 (id 0) buffer L0.indexk", "- want @", "+ got  @",
		"0 descriptors answered:", "room digests", "L0.indexk  1 pages", "REJECT",
		"replay: kvharness repro x.json",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("report does not say %q:\n%s", want, out)
		}
	}
	v2, _ := killed(t, "fp8-item-len")
	b.Reset()
	WriteCase(&b, nil, v2.Outcome.Failure.Case, v2.Outcome.Failure.Minimal)
	if !strings.Contains(b.String(), "1 descriptor answered:\n    #0   {room 0 buffer 0 src") || !strings.Contains(b.String(), "item_len 8448, but L0.kv's pages are 16384 bytes") {
		t.Errorf("result:\n%s", b.String())
	}
	b.Reset()
	report.WriteTable(&b, run(t, v, "skip-buffer"))
	if !strings.Contains(b.String(), "40×64-token pages, 6 buffers in 2 layers") ||
		!strings.Contains(b.String(), "mixed    1      ok          ok       FAIL      FAIL  ok       ok      FAIL      ok           0") {
		t.Errorf("table:\n%s", b.String())
	}
}

func TestTransferJSON(t *testing.T) {
	v, _ := killed(t, "fp8-item-len")
	r := run(t, v, "fp8-item-len")
	r.Rows[0].Failure.ReproPath = "r.json"
	var buf bytes.Buffer
	if err := report.WriteJSON(&buf, r); err != nil {
		t.Fatal(err)
	}
	data := buf.Bytes()
	var back struct {
		Passed   bool
		Verdicts []struct {
			Properties map[string]string
			Failure    struct {
				Property   string
				Repro      string
				Violations []Violation
				Digests    []pd.RoomDigest
			}
		}
	}
	if err := json.Unmarshal(data, &back); err != nil {
		t.Fatal(err)
	}
	f := back.Verdicts[0].Failure
	if back.Passed || f.Property != "descriptor" || f.Repro != "r.json" || back.Verdicts[0].Properties["descriptor"] != "FAIL" ||
		f.Violations[0].Buffer != "L0.kv" || f.Violations[0].Desc == nil || len(f.Digests) == 0 {
		t.Errorf("JSON report:\n%s", data)
	}
}
