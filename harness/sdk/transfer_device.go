package sdk

import (
	"context"
	"fmt"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/kvharness/kvharness/harness/cuda"
)

// DeviceTransferCall is one transfer on a CUDA arena: the device-memory
// twin of [TransferCall]. Both sides' pools live in the harness's one
// allocation, mapped in this process, so every copy
// is device to device.
type DeviceTransferCall struct {
	Variant    string
	Device     *cuda.Device
	Stream     *cuda.Stream // enqueue here, and only here
	Arena      cuda.Ptr     // device address of arena offset 0
	ArenaBytes int
	Pools      []Pool // every attached pool, both sides
	Buffers    []TransferBuffer
	Rooms      []TransferRoom
}

// DeviceTransferer is a transfer kernel on the GPU. TransferDevice builds
// the descriptors on the host (they depend on nothing on the device) and
// enqueues their copies on c.Stream, typically with Copy; the SDK waits for
// the stream before it answers the harness.
type DeviceTransferer interface {
	TransferDevice(ctx context.Context, c *DeviceTransferCall) ([]Descriptor, error)
}

// Copy enqueues one cuMemcpyDtoDAsync per descriptor on the call's stream,
// in order, as a transfer engine posts one work request per descriptor. It
// refuses only a copy that leaves the arena.
func (c *DeviceTransferCall) Copy(ds []Descriptor) error {
	if err := inArena(ds, c.ArenaBytes); err != nil {
		return err
	}
	for i, d := range ds {
		if err := c.Stream.DtoDAsync(c.Arena.Add(d.Dst), c.Arena.Add(d.Src), d.Length); err != nil {
			return fmt.Errorf("descriptor %d: %w", i, err)
		}
	}
	return nil
}

// transferDevice runs the device kernel and waits for its copies. It waits
// even when the kernel failed half way, so no copy is in flight when the
// harness reads the arena.
func (s *server) transferDevice(ctx context.Context, in transferInput) ([]Descriptor, error) {
	k, ok := s.p.Kernel.(DeviceTransferer)
	if !ok {
		return nil, status.Errorf(codes.Unimplemented,
			"%s has no CUDA transfer kernel (its Kernel does not implement sdk.DeviceTransferer): transfer with the shm backend (--backend cpu)", s.p.Name)
	}
	d := s.dev
	ds, qerr := k.TransferDevice(ctx, &DeviceTransferCall{Variant: s.variant, Device: d.gpu.dev, Stream: d.stream,
		Arena: d.base, ArenaBytes: d.size, Pools: s.pools, Buffers: in.buffers, Rooms: in.rooms})
	if err := d.settle("transfer", qerr); err != nil {
		return nil, err
	}
	return ds, nil
}

// ServesDevice reports whether a kernel value runs any kernel kind on the
// GPU: a store, read, transfer or load kernel. A plugin that only transfers is a
// device plugin too, so attaching a CUDA arena and listing the CUDA backend
// should ask this rather than test for DeviceStorer alone.
func ServesDevice(kernel any) bool {
	return implements[DeviceStorer](kernel) || implements[DeviceReader](kernel) || implements[DeviceTransferer](kernel) ||
		servesEither(kernel)
}
