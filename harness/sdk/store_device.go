package sdk

import (
	"context"
	"errors"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/kvharness/kvharness/harness/cuda"
	"github.com/kvharness/kvharness/harness/protocol/kvpb"
)

// deviceRowsAlign is the alignment the SDK promises DeviceStoreCall.Rows:
// enough for 16-byte vector loads. The harness places rows at the start of
// its 256-byte aligned staging window.
const deviceRowsAlign = 16

// storeBatchDevice queues every call, then waits for the stream once, all
// in one trip to the device's thread (cuda.Device.Do): the valid-count
// writes, the launches or graph replays and the wait cost one handoff, not
// one each. It waits even after a failed call, so no write is still in
// flight when the harness reads the arena.
func (s *server) storeBatchDevice(ctx context.Context, calls []*kvpb.StoreRequest) error {
	k, ok := s.p.Kernel.(DeviceStorer)
	if !ok {
		return noDeviceStore(s.p.Name)
	}
	var qerr, serr error
	err := s.dev.gpu.dev.Do(func(c *cuda.Ctx) error {
		for i, r := range calls {
			if qerr = s.enqueueStore(ctx, c, k, r); qerr != nil {
				qerr = callError(len(calls), i, qerr)
				break
			}
		}
		serr = s.dev.syncIn(c)
		return nil
	})
	if err = errors.Join(err, serr); err != nil {
		return deviceFault("store", errors.Join(qerr, err))
	}
	return qerr
}

// noDeviceStore refuses a store on a plugin whose CUDA kernels do not
// include one (a read- or transfer-only plugin attaches fine).
func noDeviceStore(name string) error {
	return status.Errorf(codes.Unimplemented,
		"%s has no CUDA store kernel (its Kernel does not implement sdk.DeviceStorer): store with the shm backend (--backend cpu)", name)
}

// deviceFault reports a failed stream wait: an illegal address or a trap
// in the kernel. It is a crash, not a refusal, because the CUDA context is
// now unusable; the harness restarts the plugin.
func deviceFault(kind string, err error) error {
	return status.Errorf(codes.DataLoss, "%s kernel faulted on the device (the CUDA context is unusable until the plugin restarts): %v", kind, err)
}

// kernelFailed is a kernel's own error, on either backend: the call's
// answer, not a fault.
func kernelFailed(kind string, err error) error {
	return status.Errorf(codes.Aborted, "%s kernel failed: %v", kind, err)
}

// settle waits for the arena's stream after a kernel queued its work and
// returned qerr: a failed wait is a device fault, else qerr is the
// kernel's failure. It waits even after a failed call, so no write is
// still in flight when the harness reads the arena.
func (a *deviceArena) settle(kind string, qerr error) error {
	if err := a.stream.Sync(); err != nil {
		return deviceFault(kind, errors.Join(qerr, err))
	}
	if qerr != nil {
		return kernelFailed(kind, qerr)
	}
	return nil
}

// enqueueStore writes the valid count and queues the store: eagerly, or as
// a replay of the graph captured for the request's shape.
func (s *server) enqueueStore(ctx context.Context, c *cuda.Ctx, k DeviceStorer, req *kvpb.StoreRequest) error {
	call, err := s.deviceCall(req)
	if err != nil {
		return err
	}
	if err := s.dev.setValidIn(c, int(req.Pool), call.N); err != nil {
		return status.Error(codes.Aborted, err.Error())
	}
	launch, err := s.deviceLaunch(ctx, c, k, req, call)
	if err != nil {
		return kernelFailed("store", err)
	}
	if err := launch(); err != nil {
		return kernelFailed("store", err)
	}
	return nil
}

// deviceLaunch returns what queues one store of call: StoreDevice itself,
// or in graph mode a replay of the graph captured for the request's key
// (capturing it on first use). Both run inside c's Do.
func (s *server) deviceLaunch(ctx context.Context, c *cuda.Ctx, k DeviceStorer, req *kvpb.StoreRequest, call *DeviceStoreCall) (func() error, error) {
	eager := func() error { return k.StoreDevice(ctx, call) }
	if !req.Graph {
		return eager, nil
	}
	key := graphKey{pool: int(req.Pool), capacity: call.Capacity, padding: call.Padding,
		rows: req.RowsOffset, loc: req.LocOffset, variant: call.Variant}
	x, err := s.dev.graphs.get(key, s.dev.stream, eager)
	if err != nil {
		return nil, err
	}
	stream := s.dev.stream
	return func() error { return c.GraphLaunch(x, stream) }, nil
}

// deviceCall checks the request as the host path does and points its
// fields into the device arena.
func (s *server) deviceCall(req *kvpb.StoreRequest) (*DeviceStoreCall, error) {
	p, err := s.checkStore(req)
	if err != nil {
		return nil, err
	}
	if req.RowsOffset%deviceRowsAlign != 0 {
		return nil, badRequest("rows offset %d: the CUDA backend needs %d-byte aligned rows; stage them at an aligned offset",
			req.RowsOffset, deviceRowsAlign)
	}
	d := s.dev
	return &DeviceStoreCall{Variant: s.variant, Pool: p, Device: d.gpu.dev, Stream: d.stream, Arena: d.base,
		Capacity: int(req.Capacity), Valid: d.validPtr(int(req.Pool)), N: int(req.Valid), Padding: req.Padding,
		Rows: d.base.Add(int(req.RowsOffset)), Loc: d.base.Add(int(req.LocOffset)), SlotBits: 8 * slotBytes(req)}, nil
}
