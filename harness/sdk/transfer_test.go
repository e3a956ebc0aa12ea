package sdk_test

import (
	"context"
	"errors"
	"slices"
	"testing"

	"google.golang.org/grpc/codes"

	"github.com/kvharness/kvharness/harness/arena"
	"github.com/kvharness/kvharness/harness/layout"
	"github.com/kvharness/kvharness/harness/pd"
	"github.com/kvharness/kvharness/harness/pool"
	"github.com/kvharness/kvharness/harness/protocol"
	"github.com/kvharness/kvharness/harness/protocol/kvpb"
	"github.com/kvharness/kvharness/harness/sdk"
	"github.com/kvharness/kvharness/harness/sdk/transfer"
	"github.com/kvharness/kvharness/harness/target"
)

// TestTransferNeedsPoolBuffers: a transfer pairs pools by the buffer each
// carries (PoolDesc.buffer); pools without one are refused, naming the
// pool, rather than paired by a guess.
func TestTransferNeedsPoolBuffers(t *testing.T) {
	l, err := layout.Builtin("bf16", 16, 4)
	must(t, err)
	g, err := pool.Plan([]pool.Spec{{Name: "a", Layout: l, Slots: 16}, {Name: "b", Layout: l, Slots: 16}}, 256)
	must(t, err)
	h := newHostArena(t, g.Size)
	srv := serve(testPlugin(&recorder{}))
	_, err = srv.Attach(context.Background(), target.Request(arena.One(arena.HostShared, hostMemory{h}), g, ""))
	must(t, err)
	_, err = srv.Transfer(context.Background(), &kvpb.TransferRequest{Buffers: []*kvpb.BufferPair{{SrcPool: 0, DstPool: 1}}})
	wantStatus(t, err, codes.InvalidArgument, `pool "a" has no buffer`)
}

// recorder is a transfer kernel that sends page 0 of each room's first
// pair per buffer and records the call.
type recorder struct {
	call *transfer.Call
	ds   []sdk.Descriptor
	err  error
}

func (r *recorder) Transfer(_ context.Context, c *transfer.Call) ([]sdk.Descriptor, error) {
	r.call = c
	if r.err != nil {
		return nil, r.err
	}
	ds := r.ds
	if ds == nil {
		for _, b := range c.Buffers {
			pb := 2 * b.Src.Layout.HeadDim * b.Src.Layout.PageSize
			room := c.Rooms[0]
			ds = append(ds, sdk.Descriptor{Room: room.ID, Buffer: b.Index, Src: b.Src.Base + int(b.Phys(room.Src[0]))*pb,
				Dst: b.Dst.Base + int(b.Phys(room.Dst[0]))*pb, Length: pb, ItemLen: pb, Run: 1})
		}
	}
	return ds, c.Copy(ds)
}

type deviceTransfer struct{}

func (deviceTransfer) TransferDevice(context.Context, *transfer.DeviceCall) ([]sdk.Descriptor, error) {
	return nil, nil
}

func TestDescribeTransferKernels(t *testing.T) {
	shm := kvpb.Backend_BACKEND_SHM
	resp, err := serve(testPlugin(&recorder{})).Describe(context.Background(), &kvpb.DescribeRequest{HeadDim: 128, PageSize: 64})
	must(t, err)
	if !slices.Equal(resp.Kernels, []string{"transfer"}) || !slices.Equal(resp.Backends, []kvpb.Backend{shm}) {
		t.Errorf("kernels %v backends %v", resp.Kernels, resp.Backends)
	}
	resp, err = serve(testPlugin(deviceTransfer{})).Describe(context.Background(), &kvpb.DescribeRequest{HeadDim: 128, PageSize: 64})
	must(t, err)
	if !slices.Equal(resp.Kernels, []string{"transfer"}) {
		t.Errorf("device transfer kernels %v", resp.Kernels)
	}
	if !slices.Equal(resp.Backends, []kvpb.Backend{kvpb.Backend_BACKEND_CUDA}) {
		t.Errorf("device transfer backends %v", resp.Backends)
	}
}

// transferArena attaches a two-buffer bf16 transfer arena in shared
// memory: A, and B carved from A's allocation with its page table shifted.
func transferArena(t *testing.T, srv served) (*hostArena, pool.Geometry) {
	t.Helper()
	l, err := layout.Builtin("bf16", 16, 4)
	must(t, err)
	bufs := []pd.Buffer{{Name: "A", Layout: "bf16", HeadDim: 16}, {Name: "B", Layout: "bf16", HeadDim: 16, Alloc: "A", Shift: 1}}
	var specs []pool.Spec
	for _, side := range []string{pd.SideSrc, pd.SideDst} {
		for _, b := range bufs {
			specs = append(specs, b.Pool(side, l, 4*4))
		}
	}
	g, err := pool.Plan(specs, 256)
	must(t, err)
	h := newHostArena(t, g.Size)
	for i := range h.mem {
		h.mem[i] = byte(i * 7)
	}
	_, err = srv.Attach(context.Background(), target.Request(arena.One(arena.HostShared, hostMemory{h}), g, ""))
	must(t, err)
	return h, g
}

// hostMemory lends a test arena to target.Request, which needs only
// its description.
type hostMemory struct{ *hostArena }

func (m hostMemory) Desc() protocol.ArenaDesc {
	return protocol.ArenaDesc{Backend: protocol.BackendSHM, Path: m.path, Size: len(m.mem)}
}
func (hostMemory) ReadAt([]byte, int) error       { return nil }
func (hostMemory) WriteAt([]byte, int) error      { return nil }
func (hostMemory) Fill(pool.Window, uint64) error { return nil }
func (hostMemory) Changed(pool.Window) ([]pool.Window, error) {
	return nil, nil
}
func (hostMemory) Reset([]pool.Window) error { return nil }
func (hostMemory) Close() error              { return nil }

func transferRequest(src, dst uint64) *kvpb.TransferRequest {
	return &kvpb.TransferRequest{
		Buffers: []*kvpb.BufferPair{{SrcPool: 0, DstPool: 2}, {SrcPool: 1, DstPool: 3}},
		Rooms:   []*kvpb.Room{{Id: 9, SrcPages: []uint64{src}, DstPages: []uint64{dst}}}}
}

func TestTransferHandsTheKernelItsBuffers(t *testing.T) {
	rec := &recorder{}
	srv := serve(testPlugin(rec))
	h, g := transferArena(t, srv)
	before := slices.Clone(h.mem)
	resp, err := srv.Transfer(context.Background(), transferRequest(1, 3))
	must(t, err)
	c := rec.call
	if len(c.Buffers) != 2 || len(c.Pools) != 4 || len(c.Rooms) != 1 || c.Rooms[0].ID != 9 {
		t.Fatalf("call %+v", c)
	}
	a, b := c.Buffers[0], c.Buffers[1]
	if a.Name != "A" || a.Alloc != "A" || a.Shift != 0 || b.Name != "B" || b.Index != 1 || b.Alloc != "A" || b.Shift != 1 ||
		b.Src.Base != g.Regions[1].Pool.Off || b.Dst.Base != g.Regions[3].Pool.Off || b.Pages() != 4 || b.Phys(3) != 0 {
		t.Errorf("buffers %v and %v", a, b)
	}
	if len(resp.Descriptors) != 2 || resp.Descriptors[1].Buffer != 1 || resp.Descriptors[1].Run != 1 {
		t.Errorf("descriptors %v", resp.Descriptors)
	}
	pb := 2 * 16 * 4
	srcB, dstB := g.Regions[1].Pool.Off+2*pb, g.Regions[3].Pool.Off+0*pb // B's page table shifts pages 1 → 2 and 3 → 0
	if !slices.Equal(h.mem[dstB:dstB+pb], before[srcB:srcB+pb]) {
		t.Error("Copy did not copy B's page")
	}
}

func TestTransferRejects(t *testing.T) {
	ctx := context.Background()
	if _, err := serve(testPlugin(&recorder{})).Transfer(ctx, transferRequest(0, 0)); err != nil {
		wantStatus(t, err, codes.FailedPrecondition, "before attach")
	} else {
		t.Error("a transfer before attach was served")
	}
	rec := &recorder{}
	srv := serve(testPlugin(rec))
	transferArena(t, srv)
	swapped := transferRequest(0, 0)
	swapped.Buffers[0] = &kvpb.BufferPair{SrcPool: 2, DstPool: 0}
	crossed := transferRequest(0, 0)
	crossed.Buffers[0].DstPool = 3
	uneven := transferRequest(0, 0)
	uneven.Rooms[0].DstPages = nil
	for name, req := range map[string]*kvpb.TransferRequest{
		"no buffers": {}, "swapped sides": swapped, "other buffer": crossed, "uneven room": uneven,
		"page past end": transferRequest(4, 0), "pool past end": {Buffers: []*kvpb.BufferPair{{SrcPool: 0, DstPool: 9}}},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := srv.Transfer(ctx, req)
			wantStatus(t, err, codes.InvalidArgument)
		})
	}
	rec.err = errors.New("no route to decode")
	_, err := srv.Transfer(ctx, transferRequest(0, 0))
	wantStatus(t, err, codes.Aborted, "no route to decode")
	rec.err, rec.ds = nil, []sdk.Descriptor{{Src: 0, Dst: 1 << 40, Length: 1}}
	_, err = srv.Transfer(ctx, transferRequest(0, 0))
	wantStatus(t, err, codes.Aborted, "leaves the")
	rec.ds = []sdk.Descriptor{{Buffer: -1}}
	_, err = srv.Transfer(ctx, transferRequest(0, 0))
	wantStatus(t, err, codes.Aborted, "negative field")
	store := serve(testPlugin(hostOnly{}))
	transferArena(t, store)
	_, err = store.Transfer(ctx, transferRequest(0, 0))
	wantStatus(t, err, codes.Unimplemented, "unknown service kvharness.v1.Transfer")
}
