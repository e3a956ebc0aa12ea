package arena

import (
	"errors"
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
		{"gpu", []protocol.Backend{shm}, ""},
	} {
		b, release, err := Choose(tc.name, 0, tc.served)
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

// pinned is a backend only OrSHM's test names.
type pinned struct{ SHM }

func TestOrSHM(t *testing.T) {
	if b, ok := OrSHM(nil).(SHM); !ok {
		t.Errorf("OrSHM(nil) = %#v; want SHM{}", b)
	}
	if b, ok := OrSHM(pinned{}).(pinned); !ok {
		t.Errorf("OrSHM(pinned{}) = %#v; want the backend given", b)
	}
}
