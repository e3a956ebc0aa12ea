package sdk

import (
	"context"
	"fmt"
	"math"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/kvharness/kvharness/harness/protocol/kvpb"
)

// transferInput is a checked transfer request.
type transferInput struct {
	buffers []TransferBuffer
	rooms   []TransferRoom
}

// Transfer checks the request, runs the kernel on the attached backend and
// answers the descriptors it built. On CUDA it waits for the stream first,
// so the harness reads finished copies.
func (s *server) Transfer(ctx context.Context, req *kvpb.TransferRequest) (*kvpb.TransferResponse, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.attached() {
		return nil, status.Error(codes.FailedPrecondition, "transfer before attach")
	}
	in, err := s.checkTransfer(req)
	if err != nil {
		return nil, err
	}
	var ds []Descriptor
	if s.dev != nil {
		ds, err = s.transferDevice(ctx, in)
	} else {
		ds, err = s.transferHost(ctx, in)
	}
	if err != nil {
		return nil, err
	}
	return descriptorsPB(ds)
}

func (s *server) transferHost(ctx context.Context, in transferInput) ([]Descriptor, error) {
	k, ok := s.p.Kernel.(Transferer)
	if !ok {
		return nil, status.Errorf(codes.Unimplemented, "%s has no transfer kernel for host memory", s.p.Name)
	}
	ds, err := k.Transfer(ctx, &TransferCall{Variant: s.variant, Arena: s.arena, Pools: s.pools, Buffers: in.buffers, Rooms: in.rooms})
	if err != nil {
		return nil, kernelFailed("transfer", err)
	}
	return ds, nil
}

// checkTransfer validates a request against the attached pools: each
// buffer pairs a src pool with the dst pool of the same buffer and layout,
// and every room's pages exist in every buffer.
func (s *server) checkTransfer(req *kvpb.TransferRequest) (transferInput, error) {
	var in transferInput
	if len(req.Buffers) == 0 {
		return in, badRequest("transfer of no buffers")
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

func (s *server) transferBuffer(i int, bp *kvpb.BufferPair) (TransferBuffer, error) {
	if int(bp.SrcPool) >= len(s.pools) || int(bp.DstPool) >= len(s.pools) || bp.SrcPool == bp.DstPool {
		return TransferBuffer{}, badRequest("buffer %d: pools %d → %d; want two different pools of the %d attached", i, bp.SrcPool, bp.DstPool, len(s.pools))
	}
	src, dst := s.pools[bp.SrcPool], s.pools[bp.DstPool]
	if src.Region != 0 || dst.Region != 0 {
		return TransferBuffer{}, badRequest("buffer %d: pools in regions %d and %d; transfers run within region 0", i, src.Region, dst.Region)
	}
	sn, err := ParsePoolName(src.Name)
	if err != nil {
		return TransferBuffer{}, badRequest("buffer %d: %v", i, err)
	}
	dn, err := ParsePoolName(dst.Name)
	switch {
	case err != nil:
		return TransferBuffer{}, badRequest("buffer %d: %v", i, err)
	case sn.Side != "src" || dn.Side != "dst" || sn.Buffer != dn.Buffer:
		return TransferBuffer{}, badRequest("buffer %d pairs pool %q with %q; want src/B with dst/B", i, src.Name, dst.Name)
	case src.Layout != dst.Layout || src.Slots != dst.Slots || src.Layout.PageSize < 1:
		return TransferBuffer{}, badRequest("buffer %s: the two sides differ (%+v, %d slots vs %+v, %d slots)", sn.Buffer, src.Layout, src.Slots, dst.Layout, dst.Slots)
	}
	return TransferBuffer{Index: i, Name: sn.Buffer, Src: src, Dst: dst, Alloc: sn.AllocKey(), Shift: sn.Shift}, nil
}

func checkRoom(i int, r *kvpb.Room, pages int) (TransferRoom, error) {
	if len(r.SrcPages) != len(r.DstPages) {
		return TransferRoom{}, badRequest("room %d: %d source and %d destination pages", i, len(r.SrcPages), len(r.DstPages))
	}
	room := TransferRoom{ID: r.Id, Src: make([]int64, len(r.SrcPages)), Dst: make([]int64, len(r.DstPages))}
	for j := range r.SrcPages {
		if r.SrcPages[j] >= uint64(pages) || r.DstPages[j] >= uint64(pages) {
			return TransferRoom{}, badRequest("room %d: page pair %d → %d outside the %d pages of a buffer", i, r.SrcPages[j], r.DstPages[j], pages)
		}
		room.Src[j], room.Dst[j] = int64(r.SrcPages[j]), int64(r.DstPages[j])
	}
	return room, nil
}

// descriptorsPB converts the kernel's answer. A negative field cannot be
// sent, and is the kernel's fault.
func descriptorsPB(ds []Descriptor) (*kvpb.TransferResponse, error) {
	out := &kvpb.TransferResponse{Descriptors: make([]*kvpb.Descriptor, len(ds))}
	for i, d := range ds {
		if d.Buffer < 0 || d.Src < 0 || d.Dst < 0 || d.Length < 0 || d.ItemLen < 0 || d.Run < 0 {
			return nil, status.Errorf(codes.Aborted, "transfer kernel failed: descriptor %d %+v has a negative field", i, d)
		}
		out.Descriptors[i] = &kvpb.Descriptor{Room: d.Room, Buffer: uint32(d.Buffer), SrcOffset: uint64(d.Src), DstOffset: uint64(d.Dst),
			Length: uint64(d.Length), ItemLen: uint64(d.ItemLen), Run: uint64(d.Run)}
	}
	return out, nil
}

// String names a transfer buffer for errors and logs.
func (b TransferBuffer) String() string {
	return fmt.Sprintf("buffer %d %s (%s, %d pages, alloc %s, shift %d)", b.Index, b.Name, b.Src.Layout.Name, b.Pages(), b.Alloc, b.Shift)
}
