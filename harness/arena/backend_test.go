package arena

import (
	"errors"
	"strings"
	"testing"

	"github.com/kvharness/kvharness/harness/cuda"
	"github.com/kvharness/kvharness/harness/protocol"
)

func TestChooseBackendWithoutGPU(t *testing.T) {
	if cuda.Available() == nil {
		t.Skip("this machine has a GPU; the cases below are for one without")
	}
	shm, dev := protocol.BackendSHM, protocol.BackendCUDA
	for _, tc := range []struct {
		name   string
		served []protocol.Backend
		want   string // "" means ErrBackend
	}{
		{"cpu", []protocol.Backend{shm}, "cpu"},
		{"cpu", []protocol.Backend{dev}, ""},
		{"auto", []protocol.Backend{shm, dev}, "cpu"},
		{"auto", []protocol.Backend{dev}, ""},
		{"cuda", []protocol.Backend{shm, dev}, ""},
	} {
		w, err := ParseWant(tc.name, 0)
		if err != nil {
			t.Fatal(err)
		}
		b, release, err := w.Choose(tc.served)
		release()
		where := ""
		if b != nil {
			where = b.Place().String()
		}
		if tc.want == "" && !errors.Is(err, ErrBackend) || tc.want != "" && (err != nil || where != tc.want) {
			t.Errorf("%s %v: where %q, err %v; want %q", tc.name, tc.served, where, err, tc.want)
		}
	}
}

// TestParseWant: every --backend value reads as its own want, and a value
// or device no run can have is refused, naming the flag.
func TestParseWant(t *testing.T) {
	for i, name := range Backends {
		w, err := ParseWant(name, 2)
		if err != nil || w.Backend != Wanted(i) || w.Device != 2 || w.Backend.String() != name {
			t.Errorf("ParseWant(%q, 2) = %+v, %v; want %v on device 2", name, w, err, Wanted(i))
		}
	}
	for _, tc := range []struct {
		name   string
		device int
		flag   string
	}{{"gpu", 0, "--backend"}, {"", 0, "--backend"}, {"cuda", -1, "--device"}} {
		if _, err := ParseWant(tc.name, tc.device); err == nil || !strings.Contains(err.Error(), tc.flag) {
			t.Errorf("ParseWant(%q, %d): err %v; want one naming %s", tc.name, tc.device, err, tc.flag)
		}
	}
	if (Want{Backend: WantCPU}).MayUseGPU() || !(Want{Backend: WantCUDA}).MayUseGPU() {
		t.Error("MayUseGPU: want false for cpu, true for cuda")
	}
}
