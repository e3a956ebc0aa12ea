package sdk

import (
	"errors"
	"os"
	"testing"

	"google.golang.org/grpc"

	"github.com/kvharness/kvharness/harness/cuda"
	"github.com/kvharness/kvharness/harness/protocol"
)

// fakeKind is a kind a kernel serves on the given backends.
type fakeKind struct{ host, device bool }

func (k fakeKind) Serves(any) (host, device bool)        { return k.host, k.device }
func (fakeKind) Register(grpc.ServiceRegistrar, *Server) {}

// holdingKind is a kind whose streams the SDK holds (load, pdasync).
type holdingKind struct{ fakeKind }

func (holdingKind) HoldsStreams() {}

func servingOn(kinds ...Kind) Plugin { return Plugin{Name: "fake", Kinds: kinds} }

var (
	warmHost   = servingOn(fakeKind{host: true})
	warmDevice = servingOn(fakeKind{device: true})
)

// TestWarmGPU: a plugin process opens the GPU the harness names as it
// starts only when its kernel serves device memory; without the hint, or
// with one that is not an ordinal, it opens nothing. The open succeeds on
// a GPU machine and fails with ErrNoDriver elsewhere, as the attach's
// would.
func TestWarmGPU(t *testing.T) {
	for _, c := range []struct {
		env    string
		plugin Plugin
		warms  bool
	}{{"", warmDevice, false}, {"x", warmDevice, false}, {"-1", warmDevice, false}, {"0", warmHost, false}, {"0", warmDevice, true}} {
		t.Setenv(protocol.WarmGPUEnv, c.env)
		done := warmGPU(c.plugin)
		if (done != nil) != c.warms {
			t.Fatalf("%s=%q, kinds %v: warms %v; want %v", protocol.WarmGPUEnv, c.env, c.plugin.Kinds, done != nil, c.warms)
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

// TestWidenDeviceQueues: only the process of a plugin serving a kind whose
// streams the SDK holds (pdasync, load) asks CUDA for 32 hardware queues
// (each costs context-creation time), and a value the user set is kept.
func TestWidenDeviceQueues(t *testing.T) {
	for _, tc := range []struct {
		name   string
		plugin Plugin
		set    string // "" leaves the variable unset
		want   string // "" wants it unset
	}{
		{"store kind", servingOn(fakeKind{true, true}), "", ""},
		{"stream holder", servingOn(holdingKind{fakeKind{true, true}}), "", deviceConnections},
		{"stream holder beside a store", servingOn(fakeKind{true, true}, holdingKind{fakeKind{true, false}}), "", deviceConnections},
		{"stream holder, user's value", servingOn(holdingKind{}), "4", "4"},
		{"store kind, user's value", servingOn(fakeKind{true, true}), "16", "16"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv("CUDA_DEVICE_MAX_CONNECTIONS", tc.set) // restored after the test
			if tc.set == "" {
				os.Unsetenv("CUDA_DEVICE_MAX_CONNECTIONS")
			}
			widenDeviceQueues(tc.plugin)
			got, ok := os.LookupEnv("CUDA_DEVICE_MAX_CONNECTIONS")
			if tc.want == "" && ok || got != tc.want {
				t.Errorf("CUDA_DEVICE_MAX_CONNECTIONS = %q (set %v), want %q", got, ok, tc.want)
			}
		})
	}
}
