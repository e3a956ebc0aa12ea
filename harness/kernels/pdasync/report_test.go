package pdasync

import (
	"bytes"
	"context"
	"encoding/json"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/kvharness/kvharness/harness/arena"
	"github.com/kvharness/kvharness/harness/internal/golden"
	"github.com/kvharness/kvharness/harness/internal/kindtest"
	"github.com/kvharness/kvharness/harness/internal/plugintest"
	"github.com/kvharness/kvharness/harness/plugin"
	"github.com/kvharness/kvharness/harness/property"
	"github.com/kvharness/kvharness/harness/report"
	"github.com/kvharness/kvharness/harness/sdk"
	"github.com/kvharness/kvharness/plugins/pdasync/kernel"
)

// killed runs the suite in process against a mutant, stopping at its first
// failing row, and returns that verdict.
func killed(t *testing.T, variant string) property.Verdict[*Case, *Result] {
	t.Helper()
	vs := runSuite(t, plugin.InProcess("pdasync", sdk.Services(kernel.Plugin)), variant, 50, 1, true)
	v := vs[len(vs)-1]
	if v.Outcome.Failure == nil {
		t.Fatalf("%s survived", variant)
	}
	return v
}

func header(variant string) report.Header {
	return report.Header{Ran: report.Ran{Backend: report.BackendCPU}, Plugin: "pdasync", Version: "1.0.0", Variant: variant, PluginArg: "pdasync", Cases: 50, Seed: 1,
		Backend: "cpu", About: "20×64-token pages, 3 buffers in 1 layers, both arenas on host shared memory"}
}

// TestReproRoundTrips: a saved failure loads back as the same case;
// replaying it fails the same property against the mutant, and passes
// against the correct plugin.
func TestReproRoundTrips(t *testing.T) {
	v := killed(t, kernel.AbortFreesInFlight)
	r, err := repro(header(kernel.AbortFreesInFlight), v)
	if err != nil {
		t.Fatal(err)
	}
	_, back, _ := kindtest.SavedAndLoaded(t, &Kind, r, "pdasync-abort-frees-in-flight-", "-pdasync-reuse-")
	if diff := cmp.Diff(r.Case, back.Case); diff != "" || back.Kernel != Name || back.Found.Property != Reuse {
		t.Fatalf("loaded %+v; case diff:\n%s", back, diff)
	}
	dir := plugintest.Dir(t)
	kindtest.Replays(t, map[string]bool{kernel.AbortFreesInFlight: true, "": false}, Reuse, func(variant string) (*Result, error) {
		sys := NewSystem(plugin.InProcess("pdasync", sdk.Services(kernel.Plugin)), plugin.InProcess("pdasync", sdk.Services(kernel.Plugin)),
			dir, Config{PrefillBackend: arena.SHM{}, Variant: variant, Seed: back.BackgroundSeed}, nil)
		defer sys.Close(context.Background())
		return sys.Check(context.Background(), back.Case.(*Case))
	})
}

// TestFailureReports pins the report of each mutant's shrunk
// counterexample (testdata/reports/VARIANT.txt; -update rewrites them):
// what a kernel author reads, the step, the handle and the page epochs
// that name the stale writer.
func TestFailureReports(t *testing.T) {
	for _, v := range kernel.Plugin.Variants {
		verdict := killed(t, v.Name)
		r, err := report.Build(Schema, header(v.Name), []property.Verdict[*Case, *Result]{verdict}, nil)
		if err != nil {
			t.Fatal(err)
		}
		r.Rows[0].Failure.ReproPath = "r.json"
		var b bytes.Buffer
		report.WriteTable(&b, r)
		report.WriteFailure(&b, r.Rows[0].Failure)
		golden.Check(t, filepath.Join("testdata", "reports", v.Name+".txt"), b.Bytes())
	}
}

// TestFailureJSON: a JSON failure carries the case, its violations (with
// their step and epoch) and the trace.
func TestFailureJSON(t *testing.T) {
	v := killed(t, kernel.FirstFailureFrees)
	r, err := report.Build(Schema, header(kernel.FirstFailureFrees), []property.Verdict[*Case, *Result]{v}, nil)
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := report.WriteJSON(&buf, r); err != nil {
		t.Fatal(err)
	}
	var back struct {
		Verdicts []struct {
			Properties map[string]string
			Failure    struct {
				Property   string
				Case       json.RawMessage
				Violations []Violation
				Trace      []string
			}
		}
	}
	if err := json.Unmarshal(buf.Bytes(), &back); err != nil {
		t.Fatal(err)
	}
	f := back.Verdicts[0].Failure
	if f.Property != "reuse" || back.Verdicts[0].Properties["reuse"] != "FAIL" || len(f.Trace) == 0 ||
		f.Violations[0].At == "" || f.Violations[0].Handle == "" {
		t.Errorf("JSON report:\n%s", buf.Bytes())
	}
	if _, err := Kind.Decode(f.Case, 0); err != nil {
		t.Errorf("the JSON case does not decode: %v", err)
	}
}
