package telemetry

import (
	"bytes"
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
	"github.com/kvharness/kvharness/harness/internal/golden"
)

// goldenH200 is the dgxh200 mock with some variety: GPU 2 busy and
// power-capped, GPU 5 answering NOT_SUPPORTED for its power limit, PCIe
// width and memory bus width.
func goldenH200(t *testing.T) nvml.Interface {
	s := newH200(t)
	busy := idleH200()
	busy.smMHz, busy.tempC, busy.powerMW = 1755, 68, 699_104
	busy.events = nvml.ClocksEventReasonSwPowerCap | nvml.ClocksEventReasonSwThermalSlowdown
	busy.usedBytes = 130 * gib
	setState(device(t, s, 2), busy)

	d := device(t, s, 5)
	d.GetEnforcedPowerLimitFunc = func() (uint32, nvml.Return) { return 0, nvml.ERROR_NOT_SUPPORTED }
	d.GetCurrPcieLinkWidthFunc = func() (int, nvml.Return) { return 0, nvml.ERROR_NOT_SUPPORTED }
	d.GetMemoryBusWidthFunc = func() (uint32, nvml.Return) { return 0, nvml.ERROR_NOT_SUPPORTED }
	return s
}

func TestWriteTextGolden(t *testing.T) {
	snap, err := Collect(goldenH200(t))
	if err != nil {
		t.Fatalf("Collect: %v", err)
	}
	var buf bytes.Buffer
	if err := snap.WriteText(&buf); err != nil {
		t.Fatalf("WriteText: %v", err)
	}
	goldenFile := filepath.Join("testdata", "h200.golden")
	golden.Check(t, goldenFile, buf.Bytes())
}

func TestWriteTextEmptyDevice(t *testing.T) {
	snap := &Snapshot{Devices: []Device{{Index: 0, Notes: []string{"name: not supported"}}}}
	var buf bytes.Buffer
	if err := snap.WriteText(&buf); err != nil {
		t.Fatal(err)
	}
	want := `driver n/a  CUDA n/a  1 GPU(s)

GPU 0  n/a  (n/a)
  uuid     n/a
  pci      n/a  gen n/a width n/a
  memory   n/a
  clocks   sm n/a MHz (max n/a)  mem n/a MHz (max n/a)
  peak bw  n/a (bus n/a bits)
  power    n/a  n/a C  n/a / n/a W
  events   n/a
  notes    name: not supported
`
	if got := buf.String(); got != want {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}
}

type failingWriter struct{ err error }

func (w failingWriter) Write([]byte) (int, error) { return 0, w.err }

func TestWriteTextReportsWriteError(t *testing.T) {
	snap, err := Collect(newH200(t))
	if err != nil {
		t.Fatal(err)
	}
	broken := errors.New("disk full")
	err = snap.WriteText(failingWriter{broken})
	if !errors.Is(err, broken) || !strings.Contains(err.Error(), "GPU report") {
		t.Errorf("err = %v, want it to wrap %v", err, broken)
	}
}
