package sdk

import (
	"context"

	"github.com/kvharness/kvharness/harness/cuda"
)

// DeviceStoreCall is one store on a CUDA arena: the device-memory twin of
// [StoreCall]. Every pointer is a device address inside the harness's arena,
// mapped in this process.
//
// The kernel must read the valid count from Valid, never from N: the SDK
// writes n there (stream-ordered) before every launch and every graph
// replay, as serving engines copy num_tokens into a static buffer before
// replaying a CUDA graph. A graph captured with N baked into a launch would
// replay the captured count forever; N is given for host-side decisions
// that do not end up in the launch, such as logging.
type DeviceStoreCall struct {
	Variant  string
	Pool     Pool
	Device   *cuda.Device
	Stream   *cuda.Stream // enqueue here, and only here: the SDK may be capturing it
	Arena    cuda.Ptr     // device address of arena offset 0; slot 0's page is Arena + Pool.Base
	Capacity int          // rows in the batch (the captured batch in graph mode)
	Valid    cuda.Ptr     // device int32 holding n, the real rows
	N        int          // n on the host: never bake it into a launch
	Padding  Padding
	Rows     cuda.Ptr // Capacity × HeadDim bf16, row-major, 16-byte aligned
	Loc      cuda.Ptr // Capacity slots, SlotBits wide, aligned to their size
	SlotBits int      // 64 (int64 slots) or 32 (int32), as the kernel declared
}

// PoolBase is the device address of slot 0's page.
func (c *DeviceStoreCall) PoolBase() cuda.Ptr { return c.Arena.Add(c.Pool.Base) }

// DeviceStorer is a store kernel that runs on the GPU. StoreDevice only
// enqueues work on c.Stream: no synchronisation, no allocation, no
// synchronous copy. The SDK may be capturing the stream into a CUDA graph
// and replays that graph for later calls with the same shape, so
// everything that varies between calls of one shape must be read on the
// device (the valid count, the rows, the slots). The SDK synchronises the
// stream before it answers the harness.
type DeviceStorer interface {
	StoreDevice(ctx context.Context, c *DeviceStoreCall) error
}

// DeviceAttach is what a kernel learns when the harness attaches a CUDA
// arena: the device, the variant and every pool's layout.
type DeviceAttach struct {
	Variant string
	Device  *cuda.Device
	Pools   []Pool
}

// DevicePreparer is optionally implemented by a DeviceStorer that has
// work to do once per attach, typically compiling its kernels with NVRTC
// for each pool's layout. Doing it here rather than on the first store
// keeps NVRTC out of the first timed call and out of graph capture, and
// turns a compile error into an Attach error the harness reports up front.
type DevicePreparer interface {
	PrepareDevice(ctx context.Context, a *DeviceAttach) error
}
