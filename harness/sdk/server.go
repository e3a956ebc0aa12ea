package sdk

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"

	"golang.org/x/sys/unix"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/kvharness/kvharness/harness/layout"
	"github.com/kvharness/kvharness/harness/protocol"
	"github.com/kvharness/kvharness/harness/protocol/kvpb"
	"github.com/kvharness/kvharness/harness/protocol/wire"
)

// Server is a plugin process's state: the plugin, the attachment every
// kind's service works on (regions, pools, staging, variant), and the base
// kvpb.Plugin service. A kind's handlers hold its lock for a call (Lock):
// one attachment, one call at a time.
type Server struct {
	kvpb.UnimplementedPluginServer
	p     Plugin
	kinds []string // the kinds whose services are registered, in order: Describe's kernels

	mu        sync.Mutex
	arena     []byte       // the shared-memory mapping of region 0, when attached to SHM
	regions   [][]byte     // every region's mapping (regions[0] is arena)
	dev       *DeviceArena // the CUDA arena, when attached to CUDA
	pools     []Pool
	staging   Window
	variant   string
	bench     hostBuffers    // CPU bench scratch, kept between Bench calls
	turns     turns          // where each bench rotation goes on (bench_rotation.go)
	bencher   Bencher        // what Bench launches for stores (the store kind's)
	onRelease []func() error // the kinds' attach state, freed before the regions are unmapped
	onDetach  []func() error // the kinds' attachments of their own, freed at Detach
	rings     bool           // offers a doorbell: served by Serve, not wrapped
	ring      RingFunc       // what the doorbell runs, when a kind answers through it
	bell      *bell          // the attach's doorbell, when it asked for one (doorbell.go)
	bellMu    sync.Mutex     // held while a doorbell is stopped: before mu, never inside it
}

// Window is a byte range of a region: the staging Window, a pool.
type Window struct{ Off, Len int }

// End is the offset just past the window.
func (w Window) End() int { return w.Off + w.Len }

// KnownVariant refuses a variant the plugin does not declare.
func (s *Server) KnownVariant(v string) error {
	if v == "" || slices.ContainsFunc(s.p.Variants, func(x Variant) bool { return x.Name == v }) {
		return nil
	}
	return BadRequest("%s has no variant %q", s.p.Name, v)
}

func (s *Server) Describe(_ context.Context, req *kvpb.DescribeRequest) (*kvpb.DescribeResponse, error) {
	if err := s.KnownVariant(req.Variant); err != nil {
		return nil, err
	}
	if err := s.checkDeclarations(req.Variant, int(req.Heads), int(req.HeadDim), int(req.PageSize)); err != nil {
		return nil, err
	}
	resp := &kvpb.DescribeResponse{
		Name: s.p.Name, Version: s.p.Version, Doc: s.p.Doc,
		Kernels:  s.kernels(),
		Backends: s.backends(),
		// The SDK imports CUDA arenas from a descriptor (DeviceArena.open),
		// sparse ones too (DeviceArena.importShared).
		CudaFdArenas:     s.servesDevice(),
		CudaSparseArenas: s.servesDevice(),
		// Bench takes a rotation's stores in turn (bench_rotation.go).
		BenchRotation: true,
		SlotBits:      uint32(s.slotBits(req.Variant)),
		Addressing:    s.addressing(req.Variant),
		ReadNonFinite: wire.NonFiniteToProto(s.p.ReadNonFinite),
		// StoreBatch comes through a doorbell when asked (doorbell.go).
		Doorbell: s.rings && s.ring != nil,
	}
	for _, g := range s.p.geometries(req.Variant, int(req.Heads), int(req.HeadDim), int(req.PageSize)) {
		resp.Layouts = append(resp.Layouts, geometryProto(g))
	}
	for _, v := range s.p.Variants {
		k := v.Kernel
		if k == "" && len(resp.Kernels) > 0 {
			k = resp.Kernels[0]
		}
		resp.Variants = append(resp.Variants, &kvpb.Variant{Name: v.Name, Doc: v.Doc, Correct: v.Correct, Kernel: k, Layouts: v.Layouts})
	}
	return resp, nil
}

// kernels are the kinds the plugin serves: the services it registered.
func (s *Server) kernels() []string { return slices.Clone(s.kinds) }

// register registers the base service and every kind's service, and keeps
// the kinds' names (protocol.KernelOf) for Describe.
func (s *Server) register(r grpc.ServiceRegistrar) {
	kvpb.RegisterPluginServer(r, s)
	rec := recorder{r, &s.kinds}
	for _, k := range s.p.Kinds {
		k.Register(rec, s)
	}
}

// recorder registers services and keeps the names of the kinds they serve.
type recorder struct {
	grpc.ServiceRegistrar
	kinds *[]string
}

func (r recorder) RegisterService(d *grpc.ServiceDesc, impl any) {
	r.ServiceRegistrar.RegisterService(d, impl)
	if k, ok := protocol.KernelOf(d.ServiceName); ok {
		*r.kinds = append(*r.kinds, string(k))
	}
}

// check refuses a plugin that lists a kind its kernel does not implement:
// its author sees it when the plugin starts, naming the kind.
func (p Plugin) check() error {
	for i, k := range p.Kinds {
		if host, device := k.Serves(p.Kernel); !host && !device {
			return fmt.Errorf("%s lists kind %d (%T), which its Kernel (%T) does not implement", p.Name, i, k, p.Kernel)
		}
	}
	return nil
}

// serves reports whether any kind of the plugin runs on host memory and on
// CUDA memory.
func (p Plugin) serves() (host, device bool) {
	for _, k := range p.Kinds {
		h, d := k.Serves(p.Kernel)
		host, device = host || h, device || d
	}
	return host, device
}

// backends lists SHM for a host kernel and CUDA for a device kernel. A
// kernel with neither (a plugin that only describes itself) keeps the
// shared-memory default, which is all it could ever attach to.
func (s *Server) backends() []kvpb.Backend {
	cpu, gpu := s.p.serves()
	var bs []kvpb.Backend
	if cpu || !gpu {
		bs = append(bs, kvpb.Backend_BACKEND_SHM)
	}
	if gpu {
		bs = append(bs, kvpb.Backend_BACKEND_CUDA)
	}
	return bs
}

func (s *Server) Attach(ctx context.Context, req *kvpb.AttachRequest) (*kvpb.AttachResponse, error) {
	if err := s.KnownVariant(req.Variant); err != nil {
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
func (s *Server) attachSHM(req *kvpb.AttachRequest) (*kvpb.AttachResponse, error) {
	regions := RegionsOf(req)
	sizes := make([]int, len(regions))
	for i, a := range regions {
		if a.GetBackend() != kvpb.Backend_BACKEND_SHM {
			return nil, status.Errorf(codes.Unimplemented, "%s maps host regions with host ones, not region %d on %v", s.p.Name, i, a.GetBackend())
		}
		sizes[i] = int(a.Size)
	}
	pools, staging, err := CheckWindows(req, sizes)
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

// RegionsOf lists an attach's regions: regions, or the one arena of a
// harness that sends one.
func RegionsOf(req *kvpb.AttachRequest) []*kvpb.Arena {
	if len(req.Regions) > 0 {
		return req.Regions
	}
	return []*kvpb.Arena{req.GetArena()}
}

// regionOf is the mapping of the region pool p lives in.
func (s *Server) regionOf(p Pool) []byte { return s.regions[p.Region] }

func (s *Server) geometry(pools []Pool) []*kvpb.Geometry { return s.DeclaredGeometry(s.variant, pools) }

// DeclaredGeometry is what the plugin declares for each pool under a
// variant: what an attach answers.
func (s *Server) DeclaredGeometry(variant string, pools []Pool) []*kvpb.Geometry {
	pl := s.p
	out := make([]*kvpb.Geometry, len(pools))
	for i, p := range pools {
		out[i] = &kvpb.Geometry{Layout: p.Layout.Name}
		for _, g := range pl.geometries(variant, p.Layout.Heads, p.Layout.HeadDim, p.Layout.PageSize) {
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
		Recipe: wire.RecipeToProto(g.Recipe), PadPolicy: wire.PadPolicyToProto(g.PadPolicy)}
}

// checkDeclarations refuses a plugin whose declarations are not ones a
// harness can honour: a slot width other than 32 or 64, a recipe out of
// bounds. The plugin's author sees it on the first Describe, naming the
// field, rather than a harness guessing.
func (s *Server) checkDeclarations(variant string, heads, headDim, pageSize int) error {
	if b := s.slotBits(variant); b != 32 && b != 64 {
		return status.Errorf(codes.FailedPrecondition, "%s declares %d-bit slots: want SlotBits 32 or 64 (0 is 64)", s.p.Name, b)
	}
	if nf := s.p.ReadNonFinite; nf != "" && nf != layout.Contained {
		return status.Errorf(codes.FailedPrecondition, "%s declares ReadNonFinite %q: a read kernel declares layout.Contained or nothing", s.p.Name, nf)
	}
	for _, g := range s.p.geometries(variant, heads, headDim, pageSize) {
		if err := wire.CheckPadPolicy(g.PadPolicy); err != nil {
			return status.Errorf(codes.FailedPrecondition, "%s declares for %s: %v", s.p.Name, g.Layout, err)
		}
		if g.Recipe == nil {
			continue
		}
		if err := g.Recipe.Validate(); err != nil {
			return status.Errorf(codes.FailedPrecondition, "%s declares for %s: %v", s.p.Name, g.Layout, err)
		}
	}
	return nil
}

// CheckWindows reads the pools and the staging window of an attach whose
// regions have the given sizes. Staging lives in region 0, where the
// inputs of every call are read.
func CheckWindows(req *kvpb.AttachRequest, sizes []int) ([]Pool, Window, error) {
	in := func(w *kvpb.Window) (Window, error) {
		if w != nil && int(w.Region) >= len(sizes) {
			return Window{}, BadRequest("window %v names no region of the %d attached", w, len(sizes))
		}
		size := sizes[w.GetRegion()]
		switch {
		case w != nil && w.Offset+w.Size <= uint64(size) && w.Offset+w.Size >= w.Offset:
			return Window{int(w.Offset), int(w.Size)}, nil
		case len(sizes) == 1:
			return Window{}, BadRequest("window %v outside the %d-byte arena", w, size)
		}
		return Window{}, BadRequest("window %v outside region %d's %d bytes", w, w.GetRegion(), size)
	}
	var pools []Pool
	for _, p := range req.Pools {
		w, err := in(p.Pool)
		if err != nil {
			return nil, Window{}, err
		}
		l := p.GetLayout()
		pools = append(pools, Pool{Name: p.Name, Slots: int(p.Slots), Base: w.Off, Bytes: w.Len, Region: int(p.Pool.Region),
			Layout: Layout{Name: l.GetName(), HeadDim: int(l.GetHeadDim()), PageSize: int(l.GetPageSize()), Heads: max(int(l.GetHeads()), 1)},
			Buffer: poolBuffer(p.GetBuffer())})
	}
	staging, err := in(req.Staging)
	if err != nil {
		return nil, Window{}, err
	}
	if req.Staging.Region != 0 {
		return nil, Window{}, BadRequest("staging in region %d: the inputs of every call are read from region 0", req.Staging.Region)
	}
	return pools, staging, disjoint(pools, staging)
}

// poolBuffer reads a pool's buffer; nil when the attach gives none.
func poolBuffer(b *kvpb.PoolBuffer) *PoolBuffer {
	if b == nil {
		return nil
	}
	side := map[kvpb.Side]string{kvpb.Side_SIDE_SRC: SideSrc, kvpb.Side_SIDE_DST: SideDst}[b.Side]
	return &PoolBuffer{Side: side, Layer: int(b.Layer), Name: b.Name, Alloc: b.Alloc, Shift: int(b.Shift)}
}

// disjoint rejects an attach whose pools overlap each other or the
// staging window in one region: a kernel writing one pool would write
// another, and a read's outputs would land in a pool the read may not
// touch.
func disjoint(pools []Pool, staging Window) error {
	ws := []Window{staging}
	regions := []int{0}
	names := []string{"staging"}
	for _, p := range pools {
		ws, regions, names = append(ws, Window{p.Base, p.Bytes}), append(regions, p.Region), append(names, "pool "+p.Name)
	}
	for i := range ws {
		for j := i + 1; j < len(ws); j++ {
			a, b := ws[i], ws[j]
			if regions[i] == regions[j] && a.Len > 0 && b.Len > 0 && a.Off < b.Off+b.Len && b.Off < a.Off+a.Len {
				return BadRequest("%s [%d, %d) overlaps %s [%d, %d); give each pool and the staging its own bytes of the arena",
					names[i], a.Off, a.Off+a.Len, names[j], b.Off, b.Off+b.Len)
			}
		}
	}
	return nil
}

func (s *Server) Detach(context.Context, *kvpb.DetachRequest) (*kvpb.DetachResponse, error) {
	s.stopBell()
	s.mu.Lock()
	defer s.mu.Unlock()
	errs := []error{s.release()}
	for _, f := range s.onDetach {
		errs = append(errs, f())
	}
	if err := errors.Join(errs...); err != nil {
		return nil, status.Errorf(codes.Internal, "detach: %v", err)
	}
	return &kvpb.DetachResponse{}, nil
}

// release unmaps whichever arena is attached. The CUDA arena is closed
// even when waiting for its stream fails, so the harness can free it.
func (s *Server) release() error {
	var errs []error
	for _, f := range s.onRelease { // a kind's state may have pinned the host regions
		errs = append(errs, f())
	}
	err := errors.Join(errs...)
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

func (s *Server) attached() bool { return s.arena != nil || s.dev != nil }

func (s *Server) servesDevice() bool {
	_, device := s.p.serves()
	return device
}

// addressing is how a variant's store takes its calls: the variant's,
// else the plugin's; nil (slot lists) when neither says.
func (s *Server) addressing(variant string) []kvpb.Addressing {
	for _, v := range s.p.Variants {
		if v.Name == variant && len(v.Addressing) > 0 {
			return v.Addressing
		}
	}
	return s.p.Addressing
}

// Addressing is how the attached variant's store takes its calls.
func (s *Server) Addressing() []kvpb.Addressing { return s.addressing(s.variant) }

// slotBits is the declared slot width for a variant: the variant's, else
// the plugin's, 64 when neither says.
func (s *Server) slotBits(variant string) int {
	for _, v := range s.p.Variants {
		if v.Name == variant && v.SlotBits != 0 {
			return v.SlotBits
		}
	}
	if s.p.SlotBits != 0 {
		return s.p.SlotBits
	}
	return 64
}

// Kernels are the kinds the plugin serves, as its Describe lists them:
// the names of the services its kinds register.
func (p Plugin) Kernels() []string {
	s := &Server{p: p}
	s.register(discard{})
	return s.kinds
}

// discard is a grpc.ServiceRegistrar that serves nothing.
type discard struct{}

func (discard) RegisterService(*grpc.ServiceDesc, any) {}
