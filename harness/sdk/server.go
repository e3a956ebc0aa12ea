package sdk

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"unsafe"

	"golang.org/x/sys/unix"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/kvharness/kvharness/harness/protocol/kvpb"
)

// server adapts a Plugin to the kvpb.Kernel service.
type server struct {
	kvpb.UnimplementedKernelServer
	p Plugin

	mu      sync.Mutex
	arena   []byte
	pools   []Pool
	staging window
	variant string
}

type window struct{ off, len int }

func (w window) end() int { return w.off + w.len }

func badRequest(format string, args ...any) error {
	return status.Errorf(codes.InvalidArgument, format, args...)
}

func (s *server) knownVariant(v string) error {
	if v == "" || slices.ContainsFunc(s.p.Variants, func(x Variant) bool { return x.Name == v }) {
		return nil
	}
	return badRequest("%s has no variant %q", s.p.Name, v)
}

func (s *server) Describe(_ context.Context, req *kvpb.DescribeRequest) (*kvpb.DescribeResponse, error) {
	if err := s.knownVariant(req.Variant); err != nil {
		return nil, err
	}
	resp := &kvpb.DescribeResponse{
		Name: s.p.Name, Version: s.p.Version, Doc: s.p.Doc,
		Kernels:  s.kernels(),
		Backends: []kvpb.Backend{kvpb.Backend_BACKEND_SHM},
	}
	for _, g := range s.p.Geometry(req.Variant, int(req.HeadDim), int(req.PageSize)) {
		resp.Layouts = append(resp.Layouts, &kvpb.Geometry{
			Layout: g.Layout, BytesPerToken: uint64(g.BytesPerToken), BytesPerPage: uint64(g.BytesPerPage)})
	}
	for _, v := range s.p.Variants {
		resp.Variants = append(resp.Variants, &kvpb.Variant{Name: v.Name, Doc: v.Doc})
	}
	return resp, nil
}

func (s *server) kernels() []string {
	var ks []string
	if _, ok := s.p.Kernel.(Storer); ok {
		ks = append(ks, "store")
	}
	return ks
}

func (s *server) Attach(_ context.Context, req *kvpb.AttachRequest) (*kvpb.AttachResponse, error) {
	if err := s.knownVariant(req.Variant); err != nil {
		return nil, err
	}
	a := req.GetArena()
	if a.GetBackend() != kvpb.Backend_BACKEND_SHM {
		return nil, status.Errorf(codes.Unimplemented, "%s supports the shm backend only, not %v", s.p.Name, a.GetBackend())
	}
	size := int(a.Size)
	pools, staging, err := checkWindows(req, size)
	if err != nil {
		return nil, err
	}
	mem, err := mapSHM(a.Path, size)
	if err != nil {
		return nil, status.Error(codes.FailedPrecondition, err.Error())
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.unmap()
	s.arena, s.pools, s.staging, s.variant = mem, pools, staging, req.Variant
	return &kvpb.AttachResponse{Geometry: s.geometry(pools)}, nil
}

func (s *server) geometry(pools []Pool) []*kvpb.Geometry {
	out := make([]*kvpb.Geometry, len(pools))
	for i, p := range pools {
		out[i] = &kvpb.Geometry{Layout: p.Layout.Name}
		for _, g := range s.p.Geometry(s.variant, p.Layout.HeadDim, p.Layout.PageSize) {
			if g.Layout == p.Layout.Name {
				out[i].BytesPerToken, out[i].BytesPerPage = uint64(g.BytesPerToken), uint64(g.BytesPerPage)
			}
		}
	}
	return out
}

func checkWindows(req *kvpb.AttachRequest, size int) ([]Pool, window, error) {
	in := func(w *kvpb.Window) (window, error) {
		if w == nil || w.Offset+w.Size > uint64(size) || w.Offset+w.Size < w.Offset {
			return window{}, badRequest("window %v outside the %d-byte arena", w, size)
		}
		return window{int(w.Offset), int(w.Size)}, nil
	}
	var pools []Pool
	for _, p := range req.Pools {
		w, err := in(p.Pool)
		if err != nil {
			return nil, window{}, err
		}
		l := p.GetLayout()
		pools = append(pools, Pool{Name: p.Name, Slots: int(p.Slots), Base: w.off, Bytes: w.len,
			Layout: Layout{Name: l.GetName(), HeadDim: int(l.GetHeadDim()), PageSize: int(l.GetPageSize())}})
	}
	staging, err := in(req.Staging)
	return pools, staging, err
}

func (s *server) Detach(context.Context, *kvpb.DetachRequest) (*kvpb.DetachResponse, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.unmap()
	return &kvpb.DetachResponse{}, nil
}

func (s *server) unmap() {
	if s.arena != nil {
		unix.Munmap(s.arena)
	}
	s.arena, s.pools = nil, nil
}

func (s *server) Store(ctx context.Context, req *kvpb.StoreRequest) (*kvpb.StoreResponse, error) {
	k, ok := s.p.Kernel.(Storer)
	if !ok {
		return nil, status.Errorf(codes.Unimplemented, "%s has no store kernel", s.p.Name)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	call, err := s.storeCall(req)
	if err != nil {
		return nil, err
	}
	if err := k.Store(ctx, call); err != nil {
		return nil, status.Errorf(codes.Aborted, "store kernel failed: %v", err)
	}
	return &kvpb.StoreResponse{}, nil
}

func (s *server) StoreBatch(ctx context.Context, req *kvpb.StoreBatchRequest) (*kvpb.StoreBatchResponse, error) {
	k, ok := s.p.Kernel.(Storer)
	if !ok {
		return nil, status.Errorf(codes.Unimplemented, "%s has no store kernel", s.p.Name)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for i, r := range req.Calls {
		call, err := s.storeCall(r)
		if err != nil {
			return nil, fmt.Errorf("call %d: %w", i, err)
		}
		if err := k.Store(ctx, call); err != nil {
			return nil, status.Errorf(codes.Aborted, "store kernel failed on call %d: %v", i, err)
		}
	}
	return &kvpb.StoreBatchResponse{}, nil
}

func (s *server) storeCall(req *kvpb.StoreRequest) (*StoreCall, error) {
	if s.arena == nil {
		return nil, status.Error(codes.FailedPrecondition, "store before attach")
	}
	if int(req.Pool) >= len(s.pools) {
		return nil, badRequest("pool %d: only %d attached", req.Pool, len(s.pools))
	}
	p := s.pools[req.Pool]
	c, n := int(req.Capacity), int(req.Valid)
	if c < 1 || n > c {
		return nil, badRequest("capacity %d, valid %d: want 1 <= capacity and valid <= capacity", c, n)
	}
	rows, err := stagingSlice[uint16](s, req.RowsOffset, c*p.Layout.HeadDim)
	if err != nil {
		return nil, fmt.Errorf("rows: %w", err)
	}
	loc, err := stagingSlice[int64](s, req.LocOffset, c)
	if err != nil {
		return nil, fmt.Errorf("loc: %w", err)
	}
	return &StoreCall{Variant: s.variant, Pool: p, Arena: s.arena, Capacity: c, Valid: n,
		Padding: req.Padding, Rows: rows, Loc: loc, Graph: req.Graph}, nil
}

// stagingSlice views n elements of T at a staging offset, after checking
// that they lie inside the staging window and are aligned for T.
func stagingSlice[T uint16 | int64 | float32](s *server, off uint64, n int) ([]T, error) {
	var zero T
	size := int(unsafe.Sizeof(zero))
	end := off + uint64(n*size)
	if off < uint64(s.staging.off) || end > uint64(s.staging.end()) || end < off || n < 0 {
		return nil, badRequest("[%d,%d) outside staging [%d,%d)", off, end, s.staging.off, s.staging.end())
	}
	if off%uint64(size) != 0 {
		return nil, badRequest("offset %d not aligned to %d bytes", off, size)
	}
	if n == 0 {
		return nil, nil
	}
	return unsafe.Slice((*T)(unsafe.Pointer(&s.arena[off])), n), nil
}
