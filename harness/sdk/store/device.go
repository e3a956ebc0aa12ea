package store

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/kvharness/kvharness/harness/cuda"
	"github.com/kvharness/kvharness/harness/protocol/kvpb"
	"github.com/kvharness/kvharness/harness/sdk"
)

// DeviceCall is one store on a CUDA arena: the device-memory twin of
// [Call]. Every pointer is a device address inside the harness's arena,
// mapped in this process.
//
// The kernel must read the valid count from Valid, never from N: the SDK
// writes n there (stream-ordered) before every launch and every graph
// replay, as serving engines copy num_tokens into a static buffer before
// replaying a CUDA graph. A graph captured with N baked into a launch would
// replay the captured count forever; N is given for host-side decisions
// that do not end up in the launch, such as logging.
type DeviceCall struct {
	Variant  string
	Pool     sdk.Pool
	Device   *cuda.Device
	Stream   *cuda.Stream // enqueue here, and only here: the SDK may be capturing it
	Arena    cuda.Ptr     // device address of arena offset 0; slot 0's page is Arena + Pool.Base
	Capacity int          // rows in the batch (the captured batch in graph mode)
	Valid    cuda.Ptr     // device int32 holding n, the real rows
	N        int          // n on the host: never bake it into a launch
	Padding  Padding
	Rows     cuda.Ptr // Capacity × RowElems bf16, row-major, 16-byte aligned
	Loc      cuda.Ptr // Capacity slots, SlotBits wide, aligned to their size
	SlotBits int      // 64 (int64 slots) or 32 (int32), as the kernel declared
	RowElems int      // elements of a row: the layout's tensors × heads × head dim
	// Scales are the static scales by tensor name, as in Call: the same
	// for every call of a target, so a graph may bake them into its launch.
	Scales map[string][]float32
	// Table, when set, addresses the call instead of Loc (PageTable's
	// arrays, copied to the device in stream order before the launch).
	// Page-table calls run eagerly: the SDK refuses them in graph mode.
	Table *DeviceTable
}

// DeviceTable is a call's page table on the device: int32 arrays, as
// PageTable describes them.
type DeviceTable struct {
	PageSize                                              int
	Indptr, Indices, LastPageLen, BatchIndices, Positions cuda.Ptr
	Requests, Pages                                       int
}

// PoolBase is the device address of slot 0's page.
func (c *DeviceCall) PoolBase() cuda.Ptr { return c.Arena.Add(c.Pool.Base) }

// DeviceStorer is a store kernel that runs on the GPU. StoreDevice only
// enqueues work on c.Stream: no synchronisation, no allocation, no
// synchronous copy. The SDK may be capturing the stream into a CUDA graph
// and replays that graph for later calls with the same shape, so
// everything that varies between calls of one shape must be read on the
// device (the valid count, the rows, the slots). The SDK synchronises the
// stream before it answers the harness.
type DeviceStorer interface {
	StoreDevice(ctx context.Context, c *DeviceCall) error
}

// deviceRowsAlign is the alignment the SDK promises DeviceCall.Rows:
// enough for 16-byte vector loads. The harness places rows at the start of
// its 256-byte aligned staging window.
const deviceRowsAlign = 16

// storeBatchDevice queues every call, then waits for the stream once, all
// in one trip to the device's thread (cuda.Device.Do): the valid-count
// writes, the launches or graph replays and the wait cost one handoff, not
// one each. It waits even after a failed call, so no write is still in
// flight when the harness reads the arena.
func (s *server) storeBatchDevice(ctx context.Context, calls []*kvpb.StoreRequest) error {
	k, ok := s.Kernel().(DeviceStorer)
	if !ok {
		return noDeviceStore(s.Name())
	}
	if err := s.tables.reserve(s.Device().GPU(), calls); err != nil {
		return sdk.DeviceFault("store", err)
	}
	var qerr, serr error
	err := s.Device().Do(func(c *cuda.Ctx) error {
		for i, r := range calls {
			if qerr = s.enqueueStore(ctx, c, k, r); qerr != nil {
				qerr = callError(len(calls), i, qerr)
				break
			}
		}
		serr = s.Device().Sync(c)
		return nil
	})
	if err = errors.Join(err, serr); err != nil {
		return sdk.DeviceFault("store", errors.Join(qerr, err))
	}
	return qerr
}

// noDeviceStore refuses a store on a plugin whose CUDA kernels do not
// include one (a read- or transfer-only plugin attaches fine).
func noDeviceStore(name string) error {
	return status.Errorf(codes.Unimplemented,
		"%s has no CUDA store kernel (its Kernel does not implement store.DeviceStorer): store with the shm backend (--backend cpu)", name)
}

// graphKey is what a captured store depends on. The valid count is not in
// it: replays read n from the pool's device word, which is exactly how a
// serving engine replays a graph captured for a bigger batch (and how the
// incident's pad-unaware scatter wrote the padded rows' slots).
type graphKey struct {
	pool      int
	capacity  int
	padding   Padding
	rows, loc uint64 // arena offsets
	variant   string
}

// enqueueStore writes the valid count and queues the store: eagerly, or as
// a replay of the graph captured for the request's shape.
func (s *server) enqueueStore(ctx context.Context, c *cuda.Ctx, k DeviceStorer, req *kvpb.StoreRequest) error {
	call, err := s.deviceCall(req)
	if err != nil {
		return err
	}
	if err := s.Device().SetValid(c, int(req.Pool), call.N); err != nil {
		return status.Error(codes.Aborted, err.Error())
	}
	if req.GetPageTable() != nil {
		if call.Table, err = s.stageTable(c, req, call); err != nil {
			return err
		}
	}
	launch, err := s.deviceLaunch(ctx, c, k, req, call)
	if err != nil {
		return sdk.KernelFailed("store", err)
	}
	if err := launch(); err != nil {
		return sdk.KernelFailed("store", err)
	}
	return nil
}

// deviceLaunch returns what queues one store of call: StoreDevice itself,
// or in graph mode a replay of the graph captured for the request's key
// (capturing it on first use). Both run inside c's Do.
func (s *server) deviceLaunch(ctx context.Context, c *cuda.Ctx, k DeviceStorer, req *kvpb.StoreRequest, call *DeviceCall) (func() error, error) {
	eager := func() error { return k.StoreDevice(ctx, call) }
	if !req.Graph {
		return eager, nil
	}
	key := graphKey{pool: int(req.Pool), capacity: call.Capacity, padding: call.Padding,
		rows: req.RowsOffset, loc: req.LocOffset, variant: call.Variant}
	x, err := s.Device().Graph(key, eager)
	if err != nil {
		return nil, err
	}
	stream := s.Device().Stream()
	return func() error { return c.GraphLaunch(x, stream) }, nil
}

// deviceCall checks the request as the host path does and points its
// fields into the device arena.
func (s *server) deviceCall(req *kvpb.StoreRequest) (*DeviceCall, error) {
	p, err := s.checkStore(req)
	if err != nil {
		return nil, err
	}
	if req.RowsOffset%deviceRowsAlign != 0 {
		return nil, sdk.BadRequest("rows offset %d: the CUDA backend needs %d-byte aligned rows; stage them at an aligned offset",
			req.RowsOffset, deviceRowsAlign)
	}
	d := s.Device()
	return &DeviceCall{Variant: s.Variant(), Pool: p, Device: d.GPU(), Stream: d.Stream(), Arena: d.Base(),
		Capacity: int(req.Capacity), Valid: d.ValidPtr(int(req.Pool)), N: int(req.Valid), Padding: req.Padding,
		Rows: d.Base().Add(int(req.RowsOffset)), Loc: d.Base().Add(int(req.LocOffset)), SlotBits: 8 * slotBytes(req),
		RowElems: rowElems(req, p), Scales: scales(req)}, nil
}

// deviceTables is the device buffer page-table calls' arrays are copied
// into: one for the plugin, grown between batches (after the last batch's
// wait, so no launch still reads it). Calls of one batch share it: each
// copy is queued after the launch before it.
type deviceTables struct {
	buf  cuda.Ptr
	size int
	dev  *cuda.Device
}

// tableBytes is the bytes a call's page table takes on the device.
func tableBytes(t *kvpb.PageTable) int {
	return 4 * (len(t.KvIndptr) + len(t.KvIndices) + len(t.KvLastPageLen) + len(t.BatchIndices) + len(t.Positions))
}

// reserve makes the buffer hold the largest page table of calls.
func (d *deviceTables) reserve(dev *cuda.Device, calls []*kvpb.StoreRequest) error {
	need := 0
	for _, r := range calls {
		if t := r.GetPageTable(); t != nil {
			need = max(need, tableBytes(t))
		}
	}
	if need <= d.size && d.dev == dev {
		return nil
	}
	if d.buf != 0 && d.dev == dev {
		if err := dev.Free(d.buf); err != nil {
			return err
		}
	}
	d.buf, d.size, d.dev = 0, 0, dev
	if need == 0 {
		return nil
	}
	size := max(need, 1<<16)
	p, err := dev.Alloc(size)
	if err != nil {
		return fmt.Errorf("page table: %w", err)
	}
	d.buf, d.size = p, size
	return nil
}

// stageTable checks a call's page table as the host path does and
// copies it into the table buffer in stream order.
func (s *server) stageTable(c *cuda.Ctx, req *kvpb.StoreRequest, call *DeviceCall) (*DeviceTable, error) {
	if req.Graph {
		return nil, status.Errorf(codes.Unimplemented, "%s: page-table addressing runs eagerly: a captured graph would replay the first call's page table; drop --graph", s.Name())
	}
	t, err := s.pageTable(req.GetPageTable(), call.Pool, call.Capacity)
	if err != nil {
		return nil, err
	}
	var b []byte
	out := &DeviceTable{PageSize: t.PageSize, Requests: len(t.LastPageLen), Pages: len(t.Indices)}
	at := func(xs []int32, p *cuda.Ptr) {
		*p = s.tables.buf.Add(len(b))
		for _, x := range xs {
			b = binary.LittleEndian.AppendUint32(b, uint32(x))
		}
	}
	at(t.Indptr, &out.Indptr)
	at(t.Indices, &out.Indices)
	at(t.LastPageLen, &out.LastPageLen)
	at(t.BatchIndices, &out.BatchIndices)
	at(t.Positions, &out.Positions)
	if len(b) > s.tables.size {
		return nil, status.Errorf(codes.Internal, "page table of %d bytes past its %d-byte buffer", len(b), s.tables.size)
	}
	if err := c.HtoDAsync(s.Device().Stream(), s.tables.buf, b); err != nil {
		return nil, status.Error(codes.Aborted, err.Error())
	}
	return out, nil
}
