package transfer

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"text/tabwriter"
	"time"

	"github.com/kvharness/kvharness/harness/arena"
	"github.com/kvharness/kvharness/harness/internal/plugintest"
	"github.com/kvharness/kvharness/harness/kind"
	"github.com/kvharness/kvharness/harness/oracle"
	"github.com/kvharness/kvharness/harness/plugin"
	"github.com/kvharness/kvharness/harness/property"
	"github.com/kvharness/kvharness/harness/rundir"
	"github.com/kvharness/kvharness/harness/sdk"
	"github.com/kvharness/kvharness/internal/testtier"
	pdtransfer "github.com/kvharness/kvharness/plugins/pdtransfer/kernel"
)

// testSuite is a transfer suite's settings, as the tests vary them.
type testSuite struct {
	kind.Params
	SuiteConfig
	session *kind.Session
	t       testing.TB
}

func (s *testSuite) Run(ctx context.Context) ([]property.Verdict[*Case, *Result], error) {
	suite, err := Suite(s.session, s.Params, s.SuiteConfig)
	if err != nil {
		return nil, err
	}
	return suite.Run(ctx)
}

func transferSuite(t testing.TB, p *plugin.Plugin, variant string, cases int) *testSuite {
	t.Helper()
	return &testSuite{session: &kind.Session{Plugin: p, Dir: plugintest.Dir(t)}, t: t,
		Params: kind.Params{Variant: variant, Cases: cases, Seed: 1, Setup: kind.Setup{Backend: arena.SHM{}}}}
}

func inProcess() *plugin.Plugin {
	return plugin.InProcess("pdtransfer", sdk.Services(pdtransfer.Plugin))
}

func TestPDTransferPassesTransferSuite(t *testing.T) {
	cases := 40 // a profile; 100 in the full suite
	if testtier.Full() {
		cases = 100
	}
	vs, err := transferSuite(t, inProcess(), "", cases).Run(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(vs) != len(Profiles) {
		t.Fatalf("%d verdicts", len(vs))
	}
	for _, v := range vs {
		if !v.Outcome.Passed() || v.Outcome.Cases != cases || v.Layout.Name != "bf16" {
			t.Errorf("%s: %d cases, failure %+v", v.Label, v.Outcome.Cases, v.Outcome.Failure)
		}
	}
}

// TestPDTransferOutOfProcess runs the suite against the real plugin
// binary: the Transfer RPC over go-plugin's gRPC, descriptors and all.
func TestPDTransferOutOfProcess(t *testing.T) {
	p := startPDTransfer(t)
	s := transferSuite(t, p, "", 30)
	s.Profiles = []string{ProfileMixed}
	vs, err := s.Run(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if !vs[0].Outcome.Passed() || vs[0].Outcome.Cases != 30 {
		t.Errorf("%+v", vs[0].Outcome)
	}
}

// startPDTransfer starts the pdtransfer binary: bundled once the harness
// lists it, else built from the source tree into the test's temp dir.
func startPDTransfer(t *testing.T) *plugin.Plugin {
	t.Helper()
	path, err := plugin.Resolve("pdtransfer")
	if err != nil {
		root, ok := plugin.SourceRoot()
		if !ok {
			t.Skip("pdtransfer is not bundled and no source tree is here")
		}
		path = filepath.Join(t.TempDir(), "pdtransfer")
		cmd := exec.Command("go", "build", "-o", path, "./plugins/pdtransfer")
		cmd.Dir = root
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Skipf("cannot build pdtransfer: %v\n%s", err, out)
		}
	}
	dir, err := rundir.Open()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { dir.Close() })
	p, err := plugin.Start(context.Background(), "pdtransfer", path, plugin.Options{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Close)
	return p
}

// killers says, for each mutant, the property that must kill it, the
// buffer the minimal counterexample's first violation names, and whether
// it names a descriptor.
var killers = []struct {
	variant    string
	property   oracle.Kind
	buffer     string
	descriptor bool
	buffers    int // buffers the minimal case keeps
}{
	{"fp8-item-len", BadDescriptor, "L0.kv", true, 1},
	{"skip-buffer", Coverage, "L0.indexk", false, 1},
	{"base-addr-dedup", Coverage, "L0.state", true, 2},
	{"legacy-page-map", Coverage, "L0.indexk", true, 2},
	{"last-run-truncated", Coverage, "L0.kv", false, 1},
}

// TestTransferMutantsKilled: every pdtransfer variant is killed within 20
// cases, shrunk to one room of one page over the buffers its bug needs,
// with a report naming the room, the buffer and (where the bug has one)
// the descriptor. It logs the mutant table.
func TestTransferMutantsKilled(t *testing.T) {
	var table strings.Builder
	tw := tabwriter.NewWriter(&table, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "mutant\tproperty\tprofile\tcases\tshrinks\ttime\tminimal case\tfirst violation")
	for _, k := range killers {
		s := transferSuite(t, inProcess(), k.variant, 20)
		s.StopAtFirst = true
		start := time.Now()
		vs, err := s.Run(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		v := vs[len(vs)-1]
		f := v.Outcome.Failure
		if f == nil || f.Flaky {
			t.Errorf("%s survived %d cases", k.variant, v.Outcome.Cases)
			continue
		}
		first := f.Minimal.Violations[0]
		fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%d\t%v\t%v\t%s\n", k.variant, f.Property, v.Label, casesTo(vs), f.Shrinks,
			time.Since(start).Round(time.Millisecond), f.Case, first.Where())
		c := f.Case
		switch {
		case f.Property != k.property:
			t.Errorf("%s: killed by %s, want %s", k.variant, f.Property, k.property)
		case len(c.Rooms) != 1 || c.PageCount() != 1 || len(c.Geometry.Buffers) != k.buffers:
			t.Errorf("%s: shrunk to %v over %d buffers; want one page over %d", k.variant, c, len(c.Geometry.Buffers), k.buffers)
		case first.Room != 0 || first.Buffer != k.buffer || (first.Descriptor >= 0) != k.descriptor:
			t.Errorf("%s: first violation %v; want room 0, buffer %s, a descriptor: %v", k.variant, first, k.buffer, k.descriptor)
		}
	}
	tw.Flush()
	t.Logf("transfer mutants:\n%s", table.String())
}

func casesTo(vs []property.Verdict[*Case, *Result]) int {
	n := 0
	for _, v := range vs {
		n += v.Outcome.Cases
	}
	return n
}

// TestTransferLong is the long run outside CI: KVHARNESS_LONG=1 go test
// -run TestTransferLong ./harness/property checks 10,000 cases (2,500 per
// profile; KVHARNESS_TRANSFER_CASES overrides the total) against the
// pdtransfer binary and logs how long it took.
func TestTransferLong(t *testing.T) {
	if testing.Short() || os.Getenv("KVHARNESS_LONG") == "" {
		t.Skip("set KVHARNESS_LONG=1 (and leave out -short) for the 10,000-case transfer run")
	}
	total := 10000
	if n, err := fmt.Sscan(os.Getenv("KVHARNESS_TRANSFER_CASES"), &total); n == 1 && err != nil {
		t.Fatal(err)
	}
	s := transferSuite(t, startPDTransfer(t), "", total/len(Profiles))
	start := time.Now()
	vs, err := s.Run(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range vs {
		if !v.Outcome.Passed() {
			t.Errorf("%s: %+v", v.Label, v.Outcome.Failure.Minimal.Violations)
		}
	}
	took := time.Since(start)
	t.Logf("%d transfer cases (each run twice) against the pdtransfer binary in %v: %.0f cases/s",
		casesTo(vs), took.Round(time.Millisecond), float64(casesTo(vs))/took.Seconds())
}
