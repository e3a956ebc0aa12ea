package sdk_test

import (
	"context"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"unsafe"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	"github.com/kvharness/kvharness/harness/cuda"
	"github.com/kvharness/kvharness/harness/oracle"
	"github.com/kvharness/kvharness/harness/protocol/kvpb"
	"github.com/kvharness/kvharness/harness/sdk"
	"github.com/kvharness/kvharness/harness/sdk/load"
	"github.com/kvharness/kvharness/harness/sdk/pdasync"
	"github.com/kvharness/kvharness/harness/sdk/read"
	"github.com/kvharness/kvharness/harness/sdk/store"
	"github.com/kvharness/kvharness/harness/sdk/transfer"
	fused "github.com/kvharness/kvharness/plugins/fusedstore/kernel"
)

type hostOnly struct{}

func (hostOnly) Store(context.Context, *store.Call) error { return nil }

type deviceOnly struct{}

func (deviceOnly) StoreDevice(context.Context, *store.DeviceCall) error { return nil }

type bothBackends struct {
	hostOnly
	deviceOnly
}

func testPlugin(kernel any) sdk.Plugin {
	return sdk.Plugin{Name: "test", Kernel: kernel, Kinds: kindsOf(kernel), Geometry: func(string, int, int) []sdk.Geometry {
		return []sdk.Geometry{{Layout: "bf16", BytesPerToken: 256, BytesPerPage: 256 * 64}}
	}}
}

// kindsOf lists every kind a test kernel implements, in the order the
// bundled plugins list theirs.
func kindsOf(kernel any) []sdk.Kind {
	var out []sdk.Kind
	for _, k := range []sdk.Kind{store.Kind, load.Kind, pdasync.Kind, read.Kind, transfer.Kind} {
		if host, device := k.Serves(kernel); host || device {
			out = append(out, k)
		}
	}
	return out
}

func TestDescribeBackends(t *testing.T) {
	shm, gpu := kvpb.Backend_BACKEND_SHM, kvpb.Backend_BACKEND_CUDA
	for _, tc := range []struct {
		name     string
		kernel   any
		backends []kvpb.Backend
		kernels  []string
	}{
		{"host", hostOnly{}, []kvpb.Backend{shm}, []string{"store"}},
		{"device", deviceOnly{}, []kvpb.Backend{gpu}, []string{"store"}},
		{"both", bothBackends{}, []kvpb.Backend{shm, gpu}, []string{"store"}},
		{"none", nil, []kvpb.Backend{shm}, nil},
		{"fusedstore", fused.Plugin.Kernel, []kvpb.Backend{shm, gpu}, []string{"store", "read"}},
	} {
		resp, err := serve(testPlugin(tc.kernel)).Describe(context.Background(), &kvpb.DescribeRequest{HeadDim: 128, PageSize: 64})
		must(t, err)
		if !slices.Equal(resp.Backends, tc.backends) || !slices.Equal(resp.Kernels, tc.kernels) {
			t.Errorf("%s: backends %v kernels %v; want %v %v", tc.name, resp.Backends, resp.Kernels, tc.backends, tc.kernels)
		}
	}
}

// cudaAttach asks for a CUDA attach of a one-pool arena.
func cudaAttach(handle []byte) *kvpb.AttachRequest {
	pl := newPlan([]string{"bf16"}, 128, 64, 64, 8)
	return pl.attach(&kvpb.Arena{Backend: kvpb.Backend_BACKEND_CUDA, IpcHandle: handle, Size: uint64(pl.size)}, "")
}

func wantStatus(t *testing.T, err error, code codes.Code, says ...string) {
	t.Helper()
	if status.Code(err) != code {
		t.Fatalf("error %v; want code %v", err, code)
	}
	for _, s := range says {
		if !strings.Contains(err.Error(), s) {
			t.Errorf("error %q does not say %q", err, s)
		}
	}
}

func TestAttachCUDAWithoutDeviceStorer(t *testing.T) {
	_, err := serve(testPlugin(hostOnly{})).Attach(context.Background(), cudaAttach(make([]byte, 64)))
	wantStatus(t, err, codes.Unimplemented, "device interface of none of its kinds, store", "shm backend")
}

func TestAttachCUDABadHandle(t *testing.T) {
	_, err := serve(testPlugin(deviceOnly{})).Attach(context.Background(), cudaAttach(make([]byte, 10)))
	wantStatus(t, err, codes.InvalidArgument, "64-byte")
}

// TestAttachCUDABadSharing: an arena must name one way to map it, and a
// descriptor's mapping must cover the arena.
func TestAttachCUDABadSharing(t *testing.T) {
	s := serve(testPlugin(deviceOnly{}))
	both := cudaAttach(make([]byte, 64))
	both.Arena.FdSocket, both.Arena.MappedSize = "/nonexistent/arena.sock", 2<<20
	_, err := s.Attach(context.Background(), both)
	wantStatus(t, err, codes.InvalidArgument, "both ipc_handle and fd_socket")
	short := cudaAttach(nil)
	short.Arena.FdSocket, short.Arena.MappedSize = "/nonexistent/arena.sock", short.Arena.Size-1
	_, err = s.Attach(context.Background(), short)
	wantStatus(t, err, codes.InvalidArgument, "mapped_size")
}

// TestDescribeDeclaresFDArenas: a plugin with a device kernel says it maps
// arenas shared by descriptor (the SDK does), a host-only one does not.
func TestDescribeDeclaresFDArenas(t *testing.T) {
	for _, tc := range []struct {
		k    any
		want bool
	}{{deviceOnly{}, true}, {hostOnly{}, false}} {
		resp, err := serve(testPlugin(tc.k)).Describe(context.Background(), &kvpb.DescribeRequest{HeadDim: 128, PageSize: 64})
		must(t, err)
		if resp.CudaFdArenas != tc.want {
			t.Errorf("%T: cuda_fd_arenas %v; want %v", tc.k, resp.CudaFdArenas, tc.want)
		}
	}
}

func TestAttachCUDAWithoutDriver(t *testing.T) {
	if cuda.Available() == nil {
		t.Skip("this machine has a CUDA driver; the no-driver error cannot be provoked")
	}
	_, err := serve(testPlugin(deviceOnly{})).Attach(context.Background(), cudaAttach(make([]byte, 64)))
	wantStatus(t, err, codes.FailedPrecondition, cuda.ErrNoDriver.Error(), "--backend cpu")
}

// TestStoreHost: a store through the server over shared memory writes what
// the kernel called directly on a copy of the arena writes.
func TestStoreHost(t *testing.T) {
	ctx := context.Background()
	pl := newPlan([]string{"bf16", "fp8-paged", "fp8-rows"}, 128, 64, 400, 130)
	h := newHostArena(t, pl.size)
	srv := serve(fused.Plugin)
	if _, err := srv.Store(ctx, &kvpb.StoreRequest{Capacity: 1}); status.Code(err) != codes.FailedPrecondition {
		t.Fatalf("store before attach: %v", err)
	}
	_, err := srv.Attach(ctx, pl.attach(h.desc(), "sink-writes"))
	must(t, err)
	rng := rand.New(rand.NewPCG(1, 2))
	for range 20 {
		c := drawCase(rng, pl, "sink-writes")
		c.stage(h.mem, pl)
		want := append([]byte(nil), h.mem...)
		direct(t, want, pl, c, "sink-writes")
		_, err := srv.Store(ctx, c.request(pl, false))
		must(t, err)
		if i := oracle.FirstDiff(h.mem, want); i >= 0 {
			t.Fatalf("case %+v: server and kernel differ at byte %d", c, i)
		}
	}
	bad := &kvpb.StoreBatchRequest{Calls: []*kvpb.StoreRequest{{Capacity: 1, RowsOffset: uint64(pl.rowsOff), LocOffset: uint64(pl.locOff)}, {Capacity: 1, RowsOffset: 1}}}
	_, err = srv.StoreBatch(ctx, bad)
	wantStatus(t, err, codes.InvalidArgument, "call 1")
}

// direct runs the fused kernel's Store on an arena image.
func direct(t *testing.T, arena []byte, pl arenaPlan, c storeCase, variant string) {
	pd := pl.pools[c.pool]
	d := int(pd.Layout.HeadDim)
	call := &store.Call{Variant: variant, Arena: arena, Capacity: c.capacity, Valid: c.n, Padding: c.padding,
		Pool: sdk.Pool{Name: pd.Name, Slots: int(pd.Slots), Base: int(pd.Pool.Offset), Bytes: int(pd.Pool.Size),
			Layout: sdk.Layout{Name: pd.Layout.Name, HeadDim: d, PageSize: int(pd.Layout.PageSize)}},
		Rows: unsafe.Slice((*uint16)(unsafe.Pointer(&arena[pl.rowsOff])), c.capacity*d),
		Loc:  unsafe.Slice((*int64)(unsafe.Pointer(&arena[pl.locOff])), c.capacity)}
	must(t, fused.Plugin.Kernel.(store.Storer).Store(context.Background(), call))
}

func TestAttachRejectsOverlappingWindows(t *testing.T) {
	pl := newPlan([]string{"bf16", "bf16"}, 128, 64, 64, 8)
	h := newHostArena(t, pl.size)
	srv := serve(fused.Plugin)
	for name, tc := range map[string]struct {
		edit func(*kvpb.AttachRequest)
		says string
	}{
		"staging over a pool": {func(r *kvpb.AttachRequest) { r.Staging.Offset = r.Pools[1].Pool.Offset }, "staging"},
		"pool over a pool":    {func(r *kvpb.AttachRequest) { r.Pools[1].Pool.Offset = r.Pools[0].Pool.Offset + 256 }, "pool"},
	} {
		req := proto.Clone(pl.attach(h.desc(), "")).(*kvpb.AttachRequest) // the plan's pools stay as they are
		tc.edit(req)
		_, err := srv.Attach(context.Background(), req)
		t.Run(name, func(t *testing.T) { wantStatus(t, err, codes.InvalidArgument, "overlaps", tc.says) })
	}
	_, err := srv.Attach(context.Background(), pl.attach(h.desc(), ""))
	must(t, err) // the plan itself is disjoint
}
