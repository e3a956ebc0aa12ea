package sdk

import (
	"context"
	"errors"
	"strings"

	"golang.org/x/sys/unix"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/kvharness/kvharness/harness/protocol/kvpb"
)

// attachCUDA maps the harness's device allocation: imported from the file
// descriptor its socket hands out, or opened through its IPC handle. Any
// earlier attach is released first: a process may not hold one IPC handle
// open twice, and the harness re-attaches the same arena.
func (s *Server) attachCUDA(ctx context.Context, req *kvpb.AttachRequest) (*kvpb.AttachResponse, error) {
	if !s.servesDevice() {
		return nil, status.Errorf(codes.Unimplemented,
			"%s has no CUDA kernel (its Kernel implements the device interface of none of its kinds, %s): attach it with the shm backend (--backend cpu)",
			s.p.Name, strings.Join(s.kinds, ", "))
	}
	a := req.GetArena()
	sizes, err := deviceRegionSizes(s.p.Name, req) // host regions may follow (attach_regions.go)
	if err != nil {
		return nil, err
	}
	if err := checkShared(a); err != nil {
		return nil, err
	}
	pools, staging, err := CheckWindows(req, sizes)
	if err != nil {
		return nil, err
	}
	hosts, err := mapHostRegions(RegionsOf(req)[1:])
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.release(); err != nil {
		return nil, status.Errorf(codes.Internal, "release the previous arena: %v", err)
	}
	dev, err := openDeviceAttach(ctx, s.p.Kernel, a, pools, req.Variant)
	if err != nil {
		for _, m := range hosts {
			unix.Munmap(m)
		}
		return nil, err
	}
	s.dev, s.pools, s.staging, s.variant = dev, pools, staging, req.Variant
	s.regions = append([][]byte{nil}, hosts...)
	return &kvpb.AttachResponse{Geometry: s.geometry(pools)}, nil
}

// openDeviceAttach opens the device and the arena, then lets the kernel
// prepare (compile) for the pools.
func openDeviceAttach(ctx context.Context, kernel any, a *kvpb.Arena, pools []Pool, variant string) (*DeviceArena, error) {
	g, err := openGPU(int(a.Device))
	if err != nil {
		return nil, status.Errorf(codes.FailedPrecondition,
			"cuda arena on device %d: %v; run the plugin on a machine with an NVIDIA driver, or attach with the shm backend (--backend cpu)", a.Device, err)
	}
	dev, err := openDeviceArena(ctx, g, a, len(pools))
	if err != nil {
		return nil, status.Errorf(codes.FailedPrecondition,
			"cuda arena on device %d: %v; the harness must export it from another live process, on the same device", a.Device, err)
	}
	if p, ok := kernel.(DevicePreparer); ok {
		if err := p.PrepareDevice(ctx, &DeviceAttach{Variant: variant, Device: g.dev, Pools: pools}); err != nil {
			return nil, status.Errorf(codes.FailedPrecondition, "prepare the CUDA kernels: %v", errors.Join(err, dev.close()))
		}
	}
	return dev, nil
}

// checkShared rejects an arena that names neither a 64-byte IPC handle nor
// a socket with a mapped size that covers it.
func checkShared(a *kvpb.Arena) error {
	switch {
	case a.FdSocket != "" && len(a.IpcHandle) != 0:
		return BadRequest("cuda arena: both ipc_handle and fd_socket are set; want one")
	case a.FdSocket != "" && a.MappedSize < a.Size:
		return BadRequest("cuda arena: mapped_size %d is less than size %d", a.MappedSize, a.Size)
	case a.FdSocket == "" && len(a.IpcHandle) != 64:
		return BadRequest("cuda arena: ipc_handle has %d bytes; want the 64-byte CUipcMemHandle from cuIpcGetMemHandle", len(a.IpcHandle))
	}
	return nil
}
