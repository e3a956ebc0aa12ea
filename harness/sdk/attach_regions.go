package sdk

import (
	"golang.org/x/sys/unix"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/kvharness/kvharness/harness/protocol/kvpb"
)

// A CUDA attach may carry host regions after its device region: a layer
// load's host pool, in host shared memory the SDK maps and the load
// kernel's Exec pins (cuMemHostRegister) so that copies from it run on a
// copy engine.

// deviceRegionSizes is the size of every region of a CUDA attach: the
// device arena, then host shared-memory regions; any other region is
// refused.
func deviceRegionSizes(name string, req *kvpb.AttachRequest) ([]int, error) {
	regions := RegionsOf(req)
	sizes := []int{int(req.GetArena().Size)}
	for i, a := range regions[1:] {
		if a.GetBackend() != kvpb.Backend_BACKEND_SHM {
			return nil, status.Errorf(codes.Unimplemented, "%s maps one device region per attach and host regions after it, not region %d on %v", name, i+1, a.GetBackend())
		}
		sizes = append(sizes, int(a.Size))
	}
	return sizes, nil
}

// mapHostRegions maps host shared-memory regions: every region of a host
// attach, or a CUDA attach's regions after its device one. On error
// nothing stays mapped.
func mapHostRegions(regions []*kvpb.Arena) ([][]byte, error) {
	var maps [][]byte
	for _, a := range regions {
		mem, err := MapSHM(a.Path, int(a.Size))
		if err != nil {
			for _, m := range maps {
				unix.Munmap(m)
			}
			return nil, status.Error(codes.FailedPrecondition, err.Error())
		}
		maps = append(maps, mem)
	}
	return maps, nil
}
