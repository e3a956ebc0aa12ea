package transfer

import (
	"context"
	"math"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/kvharness/kvharness/harness/protocol/kvpb"
	"github.com/kvharness/kvharness/harness/sdk"
)

// transferInput is a checked transfer request.
type transferInput struct {
	buffers []Buffer
	rooms   []Room
}

// Kind is the transfer kind: a plugin lists it in sdk.Plugin.Kinds to
// serve its Kernel's Transferer, DeviceTransferer or both.
var Kind sdk.Kind = kind{}

// Name is the kind's name, its service's (kvharness.v1.Transfer): what
// Describe lists and a variant of this kind names in Variant.Kernel.
var Name = sdk.NameOf(&kvpb.Transfer_ServiceDesc)

type kind struct{}

func (kind) Serves(kernel any) (host, device bool) {
	_, host = kernel.(Transferer)
	_, device = kernel.(DeviceTransferer)
	return host, device
}

func (kind) Register(r grpc.ServiceRegistrar, s *sdk.Server) {
	kvpb.RegisterTransferServer(r, &server{Server: s})
}

// server answers the transfer service from the plugin's attachment.
type server struct {
	kvpb.UnimplementedTransferServer
	*sdk.Server
}

// Transfer checks the request, runs the kernel on the attached backend and
// answers the descriptors it built. On CUDA it waits for the stream first,
// so the harness reads finished copies.
func (s *server) Transfer(ctx context.Context, req *kvpb.TransferRequest) (*kvpb.TransferResponse, error) {
	s.Lock()
	defer s.Unlock()
	if !s.Attached() {
		return nil, status.Error(codes.FailedPrecondition, "transfer before attach")
	}
	in, err := s.checkTransfer(req)
	if err != nil {
		return nil, err
	}
	var ds []sdk.Descriptor
	if s.Device() != nil {
		ds, err = s.transferDevice(ctx, in)
	} else {
		ds, err = s.transferHost(ctx, in)
	}
	if err != nil {
		return nil, err
	}
	return descriptorsPB(ds)
}

func (s *server) transferHost(ctx context.Context, in transferInput) ([]sdk.Descriptor, error) {
	k, ok := s.Kernel().(Transferer)
	if !ok {
		return nil, status.Errorf(codes.Unimplemented, "%s has no transfer kernel for host memory", s.Name())
	}
	ds, err := k.Transfer(ctx, &Call{Variant: s.Variant(), Arena: s.Arena(), Pools: s.Pools(), Buffers: in.buffers, Rooms: in.rooms})
	if err != nil {
		return nil, sdk.KernelFailed("transfer", err)
	}
	return ds, nil
}

// checkTransfer validates a request against the attached pools: each
// buffer pairs a src pool with the dst pool of the same buffer and layout,
// and every room's pages exist in every buffer.
func (s *server) checkTransfer(req *kvpb.TransferRequest) (transferInput, error) {
	var in transferInput
	if len(req.Buffers) == 0 {
		return in, sdk.BadRequest("transfer of no buffers")
	}
	pages := math.MaxInt
	for i, bp := range req.Buffers {
		b, err := s.transferBuffer(i, bp)
		if err != nil {
			return in, err
		}
		in.buffers = append(in.buffers, b)
		pages = min(pages, b.Pages())
	}
	for i, r := range req.Rooms {
		room, err := checkRoom(i, r, pages)
		if err != nil {
			return in, err
		}
		in.rooms = append(in.rooms, room)
	}
	return in, nil
}

func (s *server) transferBuffer(i int, bp *kvpb.BufferPair) (Buffer, error) {
	if int(bp.SrcPool) >= len(s.Pools()) || int(bp.DstPool) >= len(s.Pools()) || bp.SrcPool == bp.DstPool {
		return Buffer{}, sdk.BadRequest("buffer %d: pools %d → %d; want two different pools of the %d attached", i, bp.SrcPool, bp.DstPool, len(s.Pools()))
	}
	src, dst := s.Pools()[bp.SrcPool], s.Pools()[bp.DstPool]
	if src.Region != 0 || dst.Region != 0 {
		return Buffer{}, sdk.BadRequest("buffer %d: pools in regions %d and %d; transfers run within region 0", i, src.Region, dst.Region)
	}
	sn, err := sdk.BufferOf(src)
	if err != nil {
		return Buffer{}, sdk.BadRequest("buffer %d: %v", i, err)
	}
	dn, err := sdk.BufferOf(dst)
	switch {
	case err != nil:
		return Buffer{}, sdk.BadRequest("buffer %d: %v", i, err)
	case sn.Side != sdk.SideSrc || dn.Side != sdk.SideDst || sn.Name != dn.Name:
		return Buffer{}, sdk.BadRequest("buffer %d pairs pool %q with %q; want buffer B's src pool with its dst pool", i, src.Name, dst.Name)
	case src.Layout != dst.Layout || src.Slots != dst.Slots || src.Layout.PageSize < 1:
		return Buffer{}, sdk.BadRequest("buffer %s: the two sides differ (%+v, %d slots vs %+v, %d slots)", sn.Name, src.Layout, src.Slots, dst.Layout, dst.Slots)
	}
	return Buffer{Index: i, Name: sn.Name, Src: src, Dst: dst, Alloc: sn.AllocKey(), Shift: sn.Shift}, nil
}

func checkRoom(i int, r *kvpb.Room, pages int) (Room, error) {
	if len(r.SrcPages) != len(r.DstPages) {
		return Room{}, sdk.BadRequest("room %d: %d source and %d destination pages", i, len(r.SrcPages), len(r.DstPages))
	}
	room := Room{ID: r.Id, Src: make([]int64, len(r.SrcPages)), Dst: make([]int64, len(r.DstPages))}
	for j := range r.SrcPages {
		if r.SrcPages[j] >= uint64(pages) || r.DstPages[j] >= uint64(pages) {
			return Room{}, sdk.BadRequest("room %d: page pair %d → %d outside the %d pages of a buffer", i, r.SrcPages[j], r.DstPages[j], pages)
		}
		room.Src[j], room.Dst[j] = int64(r.SrcPages[j]), int64(r.DstPages[j])
	}
	return room, nil
}

// descriptorsPB converts the kernel's answer.
func descriptorsPB(ds []sdk.Descriptor) (*kvpb.TransferResponse, error) {
	out, err := sdk.DescriptorsProto(ds)
	if err != nil {
		return nil, err
	}
	return &kvpb.TransferResponse{Descriptors: out}, nil
}
