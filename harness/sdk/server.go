package sdk

import (
	"context"
	"errors"
	"slices"
	"sync"

	"golang.org/x/sys/unix"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/kvharness/kvharness/harness/protocol"
	"github.com/kvharness/kvharness/harness/protocol/kvpb"
)

// server adapts a Plugin to the kvpb.Kernel service.
type server struct {
	kvpb.UnimplementedKernelServer
	p Plugin

	mu      sync.Mutex
	arena   []byte       // the shared-memory mapping of region 0, when attached to SHM
	regions [][]byte     // every region's mapping (regions[0] is arena)
	dev     *deviceArena // the CUDA arena, when attached to CUDA
	pools   []Pool
	staging window
	variant string
	bench   hostBuffers // CPU bench scratch, kept between Bench calls
	turns   turns       // where each bench rotation goes on (bench_rotation.go)
	load    *loadExec   // the load kind's streams, made on the first load call (load_server.go)
	async   *asyncState // the pdasync role this process plays, when attached for one (pdasync_server.go)
	rings   bool        // offers a doorbell: served by Serve, not wrapped
	bell    *bell       // the attach's doorbell, when it asked for one (doorbell.go)
	bellMu  sync.Mutex  // held while a doorbell is stopped: before mu, never inside it
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
	if err := s.checkDeclarations(req.Variant, int(req.HeadDim), int(req.PageSize)); err != nil {
		return nil, err
	}
	resp := &kvpb.DescribeResponse{
		Name: s.p.Name, Version: s.p.Version, Doc: s.p.Doc,
		Kernels:  s.kernels(),
		Backends: s.backends(),
		// The SDK imports CUDA arenas from a descriptor (deviceArena.open),
		// sparse ones too (deviceArena.importShared).
		CudaFdArenas:     ServesDevice(s.p.Kernel),
		CudaSparseArenas: ServesDevice(s.p.Kernel),
		// Bench takes a rotation's stores in turn (bench_rotation.go).
		BenchRotation: true,
		SlotBits:      uint32(s.slotBits(req.Variant)),
		// StoreBatch comes through a doorbell when asked (doorbell.go).
		Doorbell: s.rings && hasHostStore(s.p.Kernel),
	}
	for _, g := range s.p.Geometry(req.Variant, int(req.HeadDim), int(req.PageSize)) {
		resp.Layouts = append(resp.Layouts, geometryProto(g))
	}
	for _, v := range s.p.Variants {
		k := v.Kernel
		if k == "" && len(resp.Kernels) > 0 {
			k = resp.Kernels[0]
		}
		resp.Variants = append(resp.Variants, &kvpb.Variant{Name: v.Name, Doc: v.Doc, Correct: v.Correct, Kernel: k})
	}
	return resp, nil
}

func (s *server) kernels() []string {
	var ks []string
	for _, k := range kernelKinds {
		if k.has(s.p.Kernel) {
			ks = append(ks, k.name)
		}
	}
	return ks
}

// kernelKind is one kind of kernel a plugin may serve, and how to tell
// whether its Kernel value implements it (on the host or the device).
type kernelKind struct {
	name string
	has  func(kernel any) bool
}

// kernelKinds lists the kinds in Describe order: one table, so that what a
// plugin says it serves never depends on the order files initialise. A new
// kernel kind adds its line here.
var kernelKinds = []kernelKind{
	{"store", hostOrDevice[Storer, DeviceStorer]},
	{"load", ServesLoad},
	{"pdasync", implements[AsyncKernel]},
	{"read", hostOrDevice[Reader, DeviceReader]},
	{"transfer", hostOrDevice[Transferer, DeviceTransferer]},
}

// implements reports whether a kernel value implements K.
func implements[K any](kernel any) bool {
	_, ok := kernel.(K)
	return ok
}

// hostOrDevice reports whether a kernel value implements a kind's host
// interface H or its device interface D: a kind is served if either is.
func hostOrDevice[H, D any](kernel any) bool {
	return implements[H](kernel) || implements[D](kernel)
}

// backends lists SHM for a host kernel and CUDA for a device kernel. A
// kernel with neither (a plugin that only describes itself) keeps the
// shared-memory default, which is all it could ever attach to.
func (s *server) backends() []kvpb.Backend {
	cpu, gpu := ServesHost(s.p.Kernel), ServesDevice(s.p.Kernel)
	var bs []kvpb.Backend
	if cpu || !gpu {
		bs = append(bs, kvpb.Backend_BACKEND_SHM)
	}
	if gpu {
		bs = append(bs, kvpb.Backend_BACKEND_CUDA)
	}
	return bs
}

func (s *server) Attach(ctx context.Context, req *kvpb.AttachRequest) (*kvpb.AttachResponse, error) {
	if err := s.knownVariant(req.Variant); err != nil {
		return nil, err
	}
	s.stopBell() // the previous attach's; release unmaps its window
	a := req.GetArena()
	switch a.GetBackend() {
	case kvpb.Backend_BACKEND_SHM:
		return s.attachSHM(req)
	case kvpb.Backend_BACKEND_CUDA:
		return s.attachCUDA(ctx, req)
	}
	return nil, status.Errorf(codes.Unimplemented, "%s supports the shm and cuda backends, not %v", s.p.Name, a.GetBackend())
}

// attachSHM maps every region of the attach (host shared memory, pinned
// or not: pinning matters to a GPU's copy engines only).
func (s *server) attachSHM(req *kvpb.AttachRequest) (*kvpb.AttachResponse, error) {
	regions := regionsOf(req)
	sizes := make([]int, len(regions))
	for i, a := range regions {
		if a.GetBackend() != kvpb.Backend_BACKEND_SHM {
			return nil, status.Errorf(codes.Unimplemented, "%s maps host regions with host ones, not region %d on %v", s.p.Name, i, a.GetBackend())
		}
		sizes[i] = int(a.Size)
	}
	pools, staging, err := checkWindows(req, sizes)
	if err != nil {
		return nil, err
	}
	if err := checkBell(req, sizes[0]); err != nil {
		return nil, err
	}
	maps, err := mapHostRegions(regions)
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.release()
	s.arena, s.regions, s.pools, s.staging, s.variant = maps[0], maps, pools, staging, req.Variant
	if err := s.openBell(req, maps[0]); err != nil {
		return nil, err
	}
	return &kvpb.AttachResponse{Geometry: s.geometry(pools)}, nil
}

// regionsOf lists an attach's regions: regions, or the one arena of a
// harness that sends one.
func regionsOf(req *kvpb.AttachRequest) []*kvpb.Arena {
	if len(req.Regions) > 0 {
		return req.Regions
	}
	return []*kvpb.Arena{req.GetArena()}
}

// regionOf is the mapping of the region pool p lives in.
func (s *server) regionOf(p Pool) []byte { return s.regions[p.Region] }

func (s *server) geometry(pools []Pool) []*kvpb.Geometry { return geometryOf(s.p, s.variant, pools) }

// geometryOf is what plugin p declares for each pool under a variant.
func geometryOf(pl Plugin, variant string, pools []Pool) []*kvpb.Geometry {
	out := make([]*kvpb.Geometry, len(pools))
	for i, p := range pools {
		out[i] = &kvpb.Geometry{Layout: p.Layout.Name}
		for _, g := range pl.Geometry(variant, p.Layout.HeadDim, p.Layout.PageSize) {
			if g.Layout == p.Layout.Name {
				out[i] = geometryProto(g)
			}
		}
	}
	return out
}

// geometryProto is a layout's declared geometry and recipe on the wire.
func geometryProto(g Geometry) *kvpb.Geometry {
	return &kvpb.Geometry{Layout: g.Layout, BytesPerToken: uint64(g.BytesPerToken), BytesPerPage: uint64(g.BytesPerPage),
		Recipe: protocol.RecipeToProto(g.Recipe)}
}

// checkDeclarations refuses a plugin whose declarations are not ones a
// harness can honour: a slot width other than 32 or 64, a recipe out of
// bounds. The plugin's author sees it on the first Describe, naming the
// field, rather than a harness guessing.
func (s *server) checkDeclarations(variant string, headDim, pageSize int) error {
	if b := s.slotBits(variant); b != 32 && b != 64 {
		return status.Errorf(codes.FailedPrecondition, "%s declares %d-bit slots: want SlotBits 32 or 64 (0 is 64)", s.p.Name, b)
	}
	for _, g := range s.p.Geometry(variant, headDim, pageSize) {
		if g.Recipe == nil {
			continue
		}
		if err := g.Recipe.Validate(); err != nil {
			return status.Errorf(codes.FailedPrecondition, "%s declares for %s: %v", s.p.Name, g.Layout, err)
		}
	}
	return nil
}

// checkWindows reads the pools and the staging window of an attach whose
// regions have the given sizes. Staging lives in region 0, where the
// inputs of every call are read.
func checkWindows(req *kvpb.AttachRequest, sizes []int) ([]Pool, window, error) {
	in := func(w *kvpb.Window) (window, error) {
		if w != nil && int(w.Region) >= len(sizes) {
			return window{}, badRequest("window %v names no region of the %d attached", w, len(sizes))
		}
		size := sizes[w.GetRegion()]
		switch {
		case w != nil && w.Offset+w.Size <= uint64(size) && w.Offset+w.Size >= w.Offset:
			return window{int(w.Offset), int(w.Size)}, nil
		case len(sizes) == 1:
			return window{}, badRequest("window %v outside the %d-byte arena", w, size)
		}
		return window{}, badRequest("window %v outside region %d's %d bytes", w, w.GetRegion(), size)
	}
	var pools []Pool
	for _, p := range req.Pools {
		w, err := in(p.Pool)
		if err != nil {
			return nil, window{}, err
		}
		l := p.GetLayout()
		pools = append(pools, Pool{Name: p.Name, Slots: int(p.Slots), Base: w.off, Bytes: w.len, Region: int(p.Pool.Region),
			Layout: Layout{Name: l.GetName(), HeadDim: int(l.GetHeadDim()), PageSize: int(l.GetPageSize())}})
	}
	staging, err := in(req.Staging)
	if err != nil {
		return nil, window{}, err
	}
	if req.Staging.Region != 0 {
		return nil, window{}, badRequest("staging in region %d: the inputs of every call are read from region 0", req.Staging.Region)
	}
	return pools, staging, disjoint(pools, staging)
}

// disjoint rejects an attach whose pools overlap each other or the
// staging window in one region: a kernel writing one pool would write
// another, and a read's outputs would land in a pool the read may not
// touch.
func disjoint(pools []Pool, staging window) error {
	ws := []window{staging}
	regions := []int{0}
	names := []string{"staging"}
	for _, p := range pools {
		ws, regions, names = append(ws, window{p.Base, p.Bytes}), append(regions, p.Region), append(names, "pool "+p.Name)
	}
	for i := range ws {
		for j := i + 1; j < len(ws); j++ {
			a, b := ws[i], ws[j]
			if regions[i] == regions[j] && a.len > 0 && b.len > 0 && a.off < b.off+b.len && b.off < a.off+a.len {
				return badRequest("%s [%d, %d) overlaps %s [%d, %d); give each pool and the staging its own bytes of the arena",
					names[i], a.off, a.off+a.len, names[j], b.off, b.off+b.len)
			}
		}
	}
	return nil
}

func (s *server) Detach(context.Context, *kvpb.DetachRequest) (*kvpb.DetachResponse, error) {
	s.stopBell()
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := errors.Join(s.release(), s.releaseAsync()); err != nil {
		return nil, status.Errorf(codes.Internal, "detach: %v", err)
	}
	return &kvpb.DetachResponse{}, nil
}

// release unmaps whichever arena is attached. The CUDA arena is closed
// even when waiting for its stream fails, so the harness can free it.
func (s *server) release() error {
	err := s.closeLoad() // it may have pinned the host regions
	for _, m := range s.regions {
		if m != nil {
			unix.Munmap(m)
		}
	}
	if s.dev != nil {
		err = errors.Join(err, s.dev.close())
	}
	s.arena, s.regions, s.dev, s.pools = nil, nil, nil, nil
	return err
}

func (s *server) attached() bool { return s.arena != nil || s.dev != nil }

// hasHostStore reports whether a kernel stores on the host, the only
// kernel the doorbell serves.
func hasHostStore(kernel any) bool {
	_, ok := kernel.(Storer)
	return ok
}

// ServesHost reports whether a kernel has any host (shared-memory) kernel.
func ServesHost(kernel any) bool {
	return implements[Storer](kernel) || implements[Reader](kernel) || implements[Transferer](kernel) ||
		servesEither(kernel)
}

// servesEither reports whether a kernel runs on both backends through the
// SDK: a load kernel (through Exec) or a pdasync engine (its SDK transport
// copies on either backend).
func servesEither(kernel any) bool {
	return ServesLoad(kernel) || implements[AsyncKernel](kernel)
}
