package transfer

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/kvharness/kvharness/harness/check"
	"github.com/kvharness/kvharness/harness/oracle"
	"github.com/kvharness/kvharness/harness/plugin"
	"github.com/kvharness/kvharness/harness/property"
	"github.com/kvharness/kvharness/harness/rundir"
	"github.com/kvharness/kvharness/harness/sdk"
	"github.com/kvharness/kvharness/harness/workload"
	pdtransfer "github.com/kvharness/kvharness/plugins/pdtransfer/kernel"
)

// killed runs the transfer suite against a pdtransfer mutant and returns
// its failing verdict and the suite.
func killed(t *testing.T, variant string) (*property.TransferSuite, property.Verdict, *rundir.Dir) {
	t.Helper()
	t.Setenv("KVHARNESS_RUNTIME_DIR", t.TempDir())
	dir, err := rundir.Open()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { dir.Close() })
	s := &property.TransferSuite{Plugin: plugin.InProcess("pdtransfer", sdk.NewServer(pdtransfer.Plugin)), Dir: dir,
		Variant: variant, Cases: 20, Seed: 1, BackgroundSeed: 5, StopAtFirst: true}
	vs, err := s.Run(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	v := vs[len(vs)-1]
	if v.Outcome.Failure == nil {
		t.Fatalf("%s survived", variant)
	}
	return s, v, dir
}

// TestTransferReproRoundTrips: a saved transfer failure loads back as the
// same case, and replaying it against the same mutant fails the same
// property, against the correct plugin not at all.
func TestTransferReproRoundTrips(t *testing.T) {
	_, v, dir := killed(t, "legacy-page-map")
	r, err := TransferRepro("pdtransfer", "legacy-page-map", 5, v)
	if err != nil {
		t.Fatal(err)
	}
	path, err := r.Save(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(path, "pdtransfer-legacy-page-map-") || !strings.Contains(path, "-transfer-coverage-") {
		t.Errorf("repro file name %s", path)
	}
	back, l, err := LoadRepro(path)
	if err != nil {
		t.Fatal(err)
	}
	first := back.Case.(*workload.Transfer).Geometry.Buffers[0].Layout
	if diff := cmp.Diff(r.Case, back.Case); diff != "" || back.Kernel != "transfer" || l.Name != first || back.Found.Property != oracle.Coverage {
		t.Fatalf("loaded %+v (layout %s); case diff:\n%s", back, l.Name, diff)
	}
	for variant, fails := range map[string]bool{"legacy-page-map": true, "": false} {
		sys := property.NewTransfers(plugin.InProcess("pdtransfer", sdk.NewServer(pdtransfer.Plugin)), dir,
			check.TransferConfig{Variant: variant, Seed: back.BackgroundSeed}, nil)
		res, err := sys.Check(context.Background(), back.Case)
		sys.Close(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		if res.Failed() != fails || (fails && res.Primary() != oracle.Coverage) {
			t.Errorf("replay against %q: %v", variant, res.Violations)
		}
	}
}

func TestWriteTransferFailure(t *testing.T) {
	s, v, _ := killed(t, "skip-buffer")
	details, ok := s.Details(v.Outcome.Failure.Minimal)
	if !ok {
		t.Fatal("no details")
	}
	var b bytes.Buffer
	WriteTransferFailure(&b, TransferFailure{Plugin: "pdtransfer", Variant: "skip-buffer", Verdict: v, Details: details, ReproPath: "x.json"})
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
	s, v2, _ := killed(t, "fp8-item-len")
	details, _ = s.Details(v2.Outcome.Failure.Minimal)
	b.Reset()
	WriteTransferResult(&b, details)
	if !strings.Contains(b.String(), "1 descriptor answered:\n    #0   {room 0 buffer 0 src") || !strings.Contains(b.String(), "item_len 8448, but L0.kv's pages are 16384 bytes") {
		t.Errorf("result:\n%s", b.String())
	}
	b.Reset()
	WriteTransferTable(&b, TransferHeader{Plugin: "pdtransfer", Version: "1.0.0", Cases: 20, Seed: 1,
		Geometry: workload.DefaultTransferGeometry(2, 40)}, []property.Verdict{v})
	if !strings.Contains(b.String(), "40×64-token pages, 6 buffers in 2 layers") ||
		!strings.Contains(b.String(), "mixed    1      ok          ok       FAIL      FAIL  ok       ok      FAIL      ok           0") {
		t.Errorf("table:\n%s", b.String())
	}
}

func TestTransferJSON(t *testing.T) {
	s, v, _ := killed(t, "fp8-item-len")
	details, _ := s.Details(v.Outcome.Failure.Minimal)
	rep := TransferJSON(TransferHeader{Plugin: "pdtransfer", Variant: "fp8-item-len"}, []property.Verdict{v},
		[]TransferFailure{{Verdict: v, Details: details, ReproPath: "r.json"}}, nil)
	data, err := json.Marshal(rep)
	if err != nil {
		t.Fatal(err)
	}
	var back struct {
		Passed   bool
		Verdicts []struct {
			Properties map[string]string
			Failure    struct {
				Property   string
				Repro      string
				Violations []oracle.TransferViolation
				Digests    []oracle.RoomDigest
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
