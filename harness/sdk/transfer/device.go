package transfer

import (
	"context"
	"fmt"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/kvharness/kvharness/harness/cuda"
	"github.com/kvharness/kvharness/harness/sdk"
)

// DeviceCall is one transfer on a CUDA arena: the device-memory
// twin of [Call]. Both sides' pools live in the harness's one
// allocation, mapped in this process, so every copy
// is device to device.
type DeviceCall struct {
	Variant    string
	Device     *cuda.Device
	Stream     *cuda.Stream // enqueue here, and only here
	Arena      cuda.Ptr     // device address of arena offset 0
	ArenaBytes int
	Pools      []sdk.Pool // every attached pool, both sides
	Buffers    []Buffer
	Rooms      []Room
}

// DeviceTransferer is a transfer kernel on the GPU. TransferDevice builds
// the descriptors on the host (they depend on nothing on the device) and
// enqueues their copies on c.Stream, typically with Copy; the SDK waits for
// the stream before it answers the harness.
type DeviceTransferer interface {
	TransferDevice(ctx context.Context, c *DeviceCall) ([]sdk.Descriptor, error)
}

// Copy enqueues one cuMemcpyDtoDAsync per descriptor on the call's stream,
// in order, as a transfer engine posts one work request per descriptor. It
// refuses only a copy that leaves the arena.
func (c *DeviceCall) Copy(ds []sdk.Descriptor) error {
	if err := sdk.InArena(ds, c.ArenaBytes); err != nil {
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
func (s *server) transferDevice(ctx context.Context, in transferInput) ([]sdk.Descriptor, error) {
	k, ok := s.Kernel().(DeviceTransferer)
	if !ok {
		return nil, status.Errorf(codes.Unimplemented,
			"%s has no CUDA transfer kernel (its Kernel does not implement transfer.DeviceTransferer): transfer with the shm backend (--backend cpu)", s.Name())
	}
	d := s.Device()
	ds, qerr := k.TransferDevice(ctx, &DeviceCall{Variant: s.Variant(), Device: d.GPU(), Stream: d.Stream(),
		Arena: d.Base(), ArenaBytes: d.Size(), Pools: s.Pools(), Buffers: in.buffers, Rooms: in.rooms})
	if err := d.Settle("transfer", qerr); err != nil {
		return nil, err
	}
	return ds, nil
}
