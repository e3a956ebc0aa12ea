package sdk

import (
	"context"

	"github.com/kvharness/kvharness/harness/cuda"
)

// DeviceAttach is what a kernel learns when the harness attaches a CUDA
// arena: the device, the variant and every pool's layout.
type DeviceAttach struct {
	Variant string
	Device  *cuda.Device
	Pools   []Pool
}

// DevicePreparer is optionally implemented by a kernel with CUDA kernels
// that has work to do once per attach, typically compiling its kernels with NVRTC
// for each pool's layout. Doing it here rather than on the first store
// keeps NVRTC out of the first timed call and out of graph capture, and
// turns a compile error into an Attach error the harness reports up front.
type DevicePreparer interface {
	PrepareDevice(ctx context.Context, a *DeviceAttach) error
}
