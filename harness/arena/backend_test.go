package arena

import (
	"errors"
	"testing"

	"github.com/kvharness/kvharness/harness/cuda"
	"github.com/kvharness/kvharness/harness/protocol/kvpb"
)

func TestChooseBackendWithoutGPU(t *testing.T) {
	if cuda.Available() == nil {
		t.Skip("this machine has a GPU; the cases below are for one without")
	}
	shm, dev := kvpb.Backend_BACKEND_SHM, kvpb.Backend_BACKEND_CUDA
	for _, tc := range []struct {
		name   string
		served []kvpb.Backend
		want   string // "" means ErrBackend
	}{
		{"cpu", []kvpb.Backend{shm}, "cpu"},
		{"cpu", []kvpb.Backend{dev}, ""},
		{"auto", []kvpb.Backend{shm, dev}, "cpu"},
		{"auto", []kvpb.Backend{dev}, ""},
		{"cuda", []kvpb.Backend{shm, dev}, ""},
		{"gpu", []kvpb.Backend{shm}, ""},
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
