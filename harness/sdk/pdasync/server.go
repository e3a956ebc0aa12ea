package pdasync

import (
	"context"
	"errors"
	"fmt"

	"golang.org/x/sys/unix"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/kvharness/kvharness/harness/cuda"
	"github.com/kvharness/kvharness/harness/protocol/kvpb"
	"github.com/kvharness/kvharness/harness/sdk"
)

// Kind is the pdasync kind: a plugin lists it in sdk.Plugin.Kinds to
// serve its Kernel, an asynchronous transfer engine, on either backend.
var Kind sdk.Kind = kind{}

// Name is the kind's name, its service's (kvharness.v1.PDAsync): what
// Describe lists and a variant of this kind names in Variant.Kernel.
var Name = sdk.NameOf(&kvpb.PDAsync_ServiceDesc)

type kind struct{}

func (kind) Serves(kernel any) (host, device bool) {
	_, ok := kernel.(Kernel)
	return ok, ok
}

// HoldsStreams: every handle's copies wait behind a gate
// (sdk.StreamHolder).
func (kind) HoldsStreams() {}

func (kind) Register(r grpc.ServiceRegistrar, s *sdk.Server) {
	srv := &server{Server: s}
	kvpb.RegisterPDAsyncServer(r, srv)
	s.OnDetach(srv.releaseAsync)
}

// server answers the pdasync service. A process attached for a role
// keeps that attachment, apart from the base Attach's, until it is
// attached again or detached.
type server struct {
	kvpb.UnimplementedPDAsyncServer
	*sdk.Server
	async *asyncState // the role this process plays, when attached for one
}

// asyncState is the pdasync role a process plays: its regions, its
// buffers, its transport (prefill) or reader (decode), and its engine.
type asyncState struct {
	role    kvpb.AsyncRole
	kernel  Kernel
	variant string
	buffers []Buffer
	maps    [][]byte     // host regions
	dev     *cuda.Device // device regions: the GPU of region 0, where they are all opened
	ptrs    []cuda.Ptr   // device regions' bases
	sizes   []int
	staging sdk.Window
	t       transport
	pre     Prefill
	dec     Decode
}

// AsyncAttach maps the regions of a role (prefill: its own arena and the
// decode arena; decode: its own arena) and starts an engine on them.
func (s *server) AsyncAttach(ctx context.Context, req *kvpb.AsyncAttachRequest) (*kvpb.AsyncAttachResponse, error) {
	k, ok := s.Kernel().(Kernel)
	if !ok {
		return nil, status.Errorf(codes.Unimplemented, "%s has no pdasync kernel (its Kernel does not implement pdasync.Kernel)", s.Name())
	}
	att := req.GetAttach()
	if err := s.KnownVariant(att.GetVariant()); err != nil {
		return nil, err
	}
	st, pools, err := s.asyncLayout(req)
	if err != nil {
		return nil, err
	}
	st.kernel = k
	s.Lock()
	defer s.Unlock()
	if err := s.releaseAsync(); err != nil {
		return nil, status.Errorf(codes.Internal, "release the previous pdasync attach: %v", err)
	}
	if err := st.open(ctx, sdk.RegionsOf(att)); err != nil {
		return nil, err
	}
	if err := st.start(ctx); err != nil {
		st.close()
		return nil, err
	}
	s.async = st
	return &kvpb.AsyncAttachResponse{Geometry: s.DeclaredGeometry(st.variant, pools)}, nil
}

// asyncLayout checks an attach's role, regions and pools, and pairs the
// pools into buffers.
func (s *server) asyncLayout(req *kvpb.AsyncAttachRequest) (*asyncState, []sdk.Pool, error) {
	att := req.GetAttach()
	regions := sdk.RegionsOf(att)
	want := map[kvpb.AsyncRole]int{kvpb.AsyncRole_ASYNC_ROLE_PREFILL: 2, kvpb.AsyncRole_ASYNC_ROLE_DECODE: 1}[req.Role]
	switch {
	case want == 0:
		return nil, nil, sdk.BadRequest("pdasync attach: role %v; want ASYNC_ROLE_PREFILL or ASYNC_ROLE_DECODE", req.Role)
	case len(regions) != want:
		return nil, nil, sdk.BadRequest("pdasync %v attach: %d regions; want %d (prefill: its arena, then the decode arena; decode: its arena)", req.Role, len(regions), want)
	}
	st := &asyncState{role: req.Role, variant: att.GetVariant()}
	for i, a := range regions {
		if a.GetBackend() != regions[0].GetBackend() {
			return nil, nil, sdk.BadRequest("pdasync attach: region %d is %v, region 0 %v; want one backend", i, a.GetBackend(), regions[0].GetBackend())
		}
		st.sizes = append(st.sizes, int(a.GetSize()))
	}
	pools, staging, err := sdk.CheckWindows(att, st.sizes)
	if err != nil {
		return nil, nil, err
	}
	if staging.Off%4 != 0 {
		return nil, nil, sdk.BadRequest("pdasync attach: staging at %d; the gate window must be 4-byte aligned", staging.Off)
	}
	st.staging = staging
	st.buffers, err = asyncBuffers(req.Role, pools)
	return st, pools, err
}

// asyncBuffers pairs the pools: buffer i is the i-th destination pool
// (decode arena: region 1 on the prefill, 0 on the decode) and, on the
// prefill, the source pool of the same buffer in region 0.
func asyncBuffers(role kvpb.AsyncRole, pools []sdk.Pool) ([]Buffer, error) {
	prefill := role == kvpb.AsyncRole_ASYNC_ROLE_PREFILL
	dstRegion := 0
	if prefill {
		dstRegion = 1
	}
	src := map[string]sdk.Pool{}
	var out []Buffer
	for _, p := range pools {
		n, err := sdk.BufferOf(p)
		if err != nil {
			return nil, sdk.BadRequest("pdasync attach: %v", err)
		}
		switch {
		case n.Side == sdk.SideSrc && prefill && p.Region == 0:
			src[n.Name] = p
		case n.Side == sdk.SideDst && p.Region == dstRegion && p.Layout.PageSize > 0:
			out = append(out, Buffer{Index: len(out), Name: n.Name, Dst: p, Alloc: n.AllocKey(), Shift: n.Shift})
		default:
			return nil, sdk.BadRequest("pdasync %v attach: pool %q in region %d; want source pools in region 0 and destination pools in region %d (the prefill's source pools only)", role, p.Name, p.Region, dstRegion)
		}
	}
	if len(out) == 0 {
		return nil, sdk.BadRequest("pdasync attach: no destination pool")
	}
	if !prefill {
		return out, nil
	}
	for i := range out {
		b := &out[i]
		sp, ok := src[b.Name]
		if !ok || sp.Layout != b.Dst.Layout || sp.Slots != b.Dst.Slots {
			return nil, sdk.BadRequest("pdasync attach: buffer %s has no source pool of its layout and size", b.Name)
		}
		b.Src = sp
	}
	if len(src) != len(out) {
		return nil, sdk.BadRequest("pdasync attach: %d source pools for %d destination pools", len(src), len(out))
	}
	return out, nil
}

// open maps the regions: host shared memory, or CUDA allocations opened by
// IPC handle in region 0's device context (a peer mapping for one on
// another GPU).
func (st *asyncState) open(ctx context.Context, regions []*kvpb.Arena) error {
	if regions[0].GetBackend() == kvpb.Backend_BACKEND_SHM {
		for _, a := range regions {
			m, err := sdk.MapSHM(a.Path, int(a.Size))
			if err != nil {
				st.close()
				return status.Error(codes.FailedPrecondition, err.Error())
			}
			st.maps = append(st.maps, m)
		}
		return nil
	}
	if regions[0].GetBackend() != kvpb.Backend_BACKEND_CUDA {
		return status.Errorf(codes.Unimplemented, "pdasync maps shm and cuda regions, not %v", regions[0].GetBackend())
	}
	return st.openDevice(regions)
}

func (st *asyncState) openDevice(regions []*kvpb.Arena) error {
	home := int(regions[0].Device)
	g, err := sdk.OpenDevice(home)
	if err != nil {
		return status.Errorf(codes.FailedPrecondition, "pdasync cuda region on device %d: %v; run the plugin on a machine with an NVIDIA driver, or use the shm backend (--backend cpu)", home, err)
	}
	st.dev = g
	for i, a := range regions {
		if a.FdSocket != "" || len(a.IpcHandle) != 64 {
			st.close()
			return sdk.BadRequest("pdasync cuda region %d: want a 64-byte ipc_handle (pdasync opens every region by IPC), got %d bytes and fd_socket %q", i, len(a.IpcHandle), a.FdSocket)
		}
		p, err := g.IpcOpen([64]byte(a.IpcHandle))
		if err != nil {
			st.close()
			return status.Errorf(codes.FailedPrecondition, "pdasync cuda region %d (device %d) in device %d's context: %v", i, a.Device, home, err)
		}
		st.ptrs = append(st.ptrs, p)
	}
	return nil
}

// start builds the role's transport or reader and a fresh engine.
func (st *asyncState) start(ctx context.Context) error {
	dev := st.dev
	var err error
	if st.role == kvpb.AsyncRole_ASYNC_ROLE_PREFILL {
		if st.t == nil {
			st.t = st.transport()
		}
		st.pre, err = st.kernel.NewPrefill(ctx, &PrefillAttach{Variant: st.variant, Buffers: st.buffers, Device: dev, t: st.t})
	} else {
		st.dec, err = st.kernel.NewDecode(ctx, &DecodeAttach{Variant: st.variant, Buffers: st.buffers, Device: dev, read: st.read})
	}
	if err != nil {
		return status.Errorf(codes.FailedPrecondition, "start the %v engine: %v", st.role, err)
	}
	return nil
}

func (st *asyncState) transport() transport {
	gates := st.staging
	if st.dev == nil {
		return &hostTransport{src: st.maps[0], dst: st.maps[1], gates: st.maps[0][gates.Off:gates.End()]}
	}
	return &deviceTransport{dev: st.dev, src: st.ptrs[0], dst: st.ptrs[1], srcSize: st.sizes[0], dstSize: st.sizes[1],
		gates: st.ptrs[0].Add(gates.Off), nGates: gates.Len / 4, queues: sdk.DeviceQueues()}
}

// read copies n bytes at off of region 0 (the decode arena).
func (st *asyncState) read(off, n int) ([]byte, error) {
	if off < 0 || n < 0 || off > st.sizes[0]-n {
		return nil, fmt.Errorf("read [%d,%d) outside the %d-byte decode arena", off, off+n, st.sizes[0])
	}
	out := make([]byte, n)
	if st.dev == nil {
		copy(out, st.maps[0][off:off+n])
		return out, nil
	}
	return out, st.dev.DtoH(out, st.ptrs[0].Add(off))
}

// close stops the transport and unmaps every region.
func (st *asyncState) close() error {
	var errs []error
	if st.t != nil {
		errs = append(errs, st.t.close())
	}
	for _, m := range st.maps {
		errs = append(errs, unix.Munmap(m))
	}
	for _, p := range st.ptrs {
		errs = append(errs, st.dev.IpcClose(p))
	}
	st.maps, st.ptrs, st.t = nil, nil, nil
	return errors.Join(errs...)
}

func (s *server) releaseAsync() error {
	if s.async == nil {
		return nil
	}
	err := s.async.close()
	s.async = nil
	return err
}

// role returns the attached state if it plays role.
func (s *server) role(call string, role kvpb.AsyncRole) (*asyncState, error) {
	switch {
	case s.async == nil:
		return nil, status.Errorf(codes.FailedPrecondition, "%s before AsyncAttach", call)
	case s.async.role != role:
		return nil, status.Errorf(codes.FailedPrecondition, "%s on a process attached as %v; it goes to the %v process", call, s.async.role, role)
	}
	return s.async, nil
}

// onRole runs an Async call's body under the server's lock, on the engine
// of a process attached as role; any other process refuses the call.
func onRole[R any](s *server, call string, role kvpb.AsyncRole, body func(*asyncState) (R, error)) (R, error) {
	s.Lock()
	defer s.Unlock()
	st, err := s.role(call, role)
	if err != nil {
		var none R
		return none, err
	}
	return body(st)
}

// engineFailed is an engine's error: the call's answer, not a crash.
func engineFailed(call string, err error) error {
	return status.Errorf(codes.Aborted, "pdasync engine failed in %s: %v", call, err)
}

// AsyncReset waits for every posted handle to end and starts a fresh
// engine: a new case begins.
func (s *server) AsyncReset(ctx context.Context, _ *kvpb.AsyncResetRequest) (*kvpb.AsyncResetResponse, error) {
	s.Lock()
	defer s.Unlock()
	if s.async == nil {
		return nil, status.Error(codes.FailedPrecondition, "AsyncReset before AsyncAttach")
	}
	st := s.async
	if st.t != nil {
		if err := st.t.drain(ctx); err != nil {
			return nil, status.Errorf(codes.DataLoss, "reset: %v", err)
		}
	}
	if err := st.start(ctx); err != nil {
		return nil, err
	}
	return &kvpb.AsyncResetResponse{}, nil
}
