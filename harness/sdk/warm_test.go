package sdk

import (
	"context"
	"errors"
	"testing"

	"github.com/kvharness/kvharness/harness/cuda"
	"github.com/kvharness/kvharness/harness/protocol"
)

type warmHost struct{}

func (warmHost) Store(context.Context, *StoreCall) error { return nil }

type warmDevice struct{}

func (warmDevice) StoreDevice(context.Context, *DeviceStoreCall) error { return nil }

// TestWarmGPU: a plugin process opens the GPU the harness names as it
// starts only when its kernel serves device memory; without the hint, or
// with one that is not an ordinal, it opens nothing. The open succeeds on
// a GPU machine and fails with ErrNoDriver elsewhere, as the attach's
// would.
func TestWarmGPU(t *testing.T) {
	for _, c := range []struct {
		env    string
		kernel any
		warms  bool
	}{{"", warmDevice{}, false}, {"x", warmDevice{}, false}, {"-1", warmDevice{}, false}, {"0", warmHost{}, false}, {"0", warmDevice{}, true}} {
		t.Setenv(protocol.WarmGPUEnv, c.env)
		done := warmGPU(c.kernel)
		if (done != nil) != c.warms {
			t.Fatalf("%s=%q, kernel %T: warms %v; want %v", protocol.WarmGPUEnv, c.env, c.kernel, done != nil, c.warms)
		}
		if done == nil {
			continue
		}
		err := <-done
		switch avail := cuda.Available(); {
		case avail == nil && err != nil:
			t.Fatalf("warming GPU 0: %v", err)
		case avail != nil && !errors.Is(err, cuda.ErrNoDriver):
			t.Fatalf("warming GPU 0 without a driver: %v; want an error wrapping cuda.ErrNoDriver", err)
		}
	}
}
