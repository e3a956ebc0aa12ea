// Package store serves the store kind: a kernel that writes rows into a
// pool's slots (a KV cache's set_kv_buffer), on host memory ([Storer]),
// CUDA memory ([DeviceStorer]) or both. A plugin lists [Kind] in
// sdk.Plugin.Kinds; the SDK checks every request against the attached
// arena and hands the kernel plain slices or device pointers.
//
// The kernel writes through Call.Arena at Call.Pool.Base plus its own
// offsets. The arena includes the guard zones, so a kernel that writes
// slot -1 lands in a guard the harness checks, exactly as a CUDA kernel
// would; a write outside the arena panics, and the harness reports the
// plugin as crashed. The SDK refuses a store staged at another slot width
// than the kernel declares, and hands a 32-bit kernel both the int32
// staging (Call.Loc32) and the slots widened (Loc).
//
// On CUDA the SDK calls StoreDevice with device pointers ([DeviceCall]).
// StoreDevice only enqueues on the attach's stream; the SDK synchronises
// before it answers. Before every launch or graph replay the SDK writes
// the valid count n into a per-pool device int32 (DeviceCall.Valid), the
// way serving engines feed a captured graph. In graph mode
// (StoreRequest.graph) the first call of each shape — pool, capacity,
// padding, rows and loc offsets, variant — is captured into a CUDA graph
// and later calls replay it with only n rewritten. That is how the
// incident happened: a pad-unaware scatter captured at capacity C and
// replayed with fewer valid rows writes the padded rows' slots.
package store

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	"github.com/kvharness/kvharness/harness/protocol"
	"github.com/kvharness/kvharness/harness/protocol/kvpb"
	"github.com/kvharness/kvharness/harness/sdk"
)

// Padding is how padded rows mark themselves; see Call.
type Padding = kvpb.Padding

// Padding conventions.
const (
	PadNone   = kvpb.Padding_PADDING_NONE
	PadCount  = kvpb.Padding_PADDING_COUNT
	PadSink   = kvpb.Padding_PADDING_SINK
	PadMinus1 = kvpb.Padding_PADDING_MINUS1
	// PadTable: the call is addressed by Call.Table, whose rows at or
	// past their request's length are the padding.
	PadTable = kvpb.Padding_PADDING_PAGE_TABLE
)

// Addressing is how a store call names where each row goes; a plugin
// declares the modes its kernel takes (sdk.Plugin.Addressing).
type Addressing = kvpb.Addressing

// Addressing modes.
const (
	BySlots     = kvpb.Addressing_ADDRESSING_SLOTS
	ByPageTable = kvpb.Addressing_ADDRESSING_PAGE_TABLE
)

// PageTable is a call's page-table addressing, FlashInfer's
// append_paged_kv_cache arguments: request b's pages are
// Indices[Indptr[b]:Indptr[b+1]], the last LastPageLen[b] full (0: empty);
// row i appends to request BatchIndices[i] at position Positions[i].
// Its length is (pages - 1) * PageSize + LastPageLen[b] (0 for no pages):
// a row at or past it is padding and must not be stored.
type PageTable struct {
	PageSize     int
	Indptr       []int32
	Indices      []int32
	LastPageLen  []int32
	BatchIndices []int32
	Positions    []int32
}

// Call is one store: write Rows[i] into slot Loc[i] of Pool for the
// rows that are real. Rows Valid..Capacity-1 are padding: under PadCount
// their Loc holds stale slots, under PadSink slot 0, under PadMinus1 -1.
//
// Loc is always int64. When the kernel declares 32-bit slots, the harness
// stages them as int32: Loc32 is that staging, as the kernel's engine
// would hand it over, and Loc holds the same values sign-extended (a -1
// stays -1).
type Call struct {
	Variant  string
	Pool     sdk.Pool
	Arena    []byte   // the whole arena, guards and staging included
	Capacity int      // rows in the batch
	Valid    int      // real rows
	Padding  Padding  //
	Rows     []uint16 // Capacity × RowElems bf16 bit patterns
	// RowElems is the elements of one row: the layout's tensors (K then
	// V, or one latent row) of Heads × HeadDim each, head-major.
	RowElems int
	// Scales are the static scales of a layout that stores none (vLLM's
	// k_scale and v_scale), by tensor name: one value, or one per head.
	// A correct kernel stores code(x / scale).
	Scales   map[string][]float32
	Loc      []int64 // Capacity slots
	Loc32    []int32 // the staged 32-bit slots when SlotBits is 32, else nil
	SlotBits int     // 64 or 32: the width the harness staged
	Graph    bool    // the harness asked for CUDA-graph replay; CPU kernels ignore it
	// Table, when set, addresses the call instead of Loc (which then
	// holds -1 for every row): sent only to a kernel that declares
	// ByPageTable.
	Table *PageTable
}

// Storer is a store kernel over host memory.
type Storer interface {
	Store(ctx context.Context, call *Call) error
}

// Kind is the store kind: a plugin lists it in sdk.Plugin.Kinds to serve
// its Kernel's Storer, DeviceStorer (with sdk.DevicePreparer) or both.
var Kind sdk.Kind = kind{}

// Name is the kind's name, its service's (kvharness.v1.Store): what
// Describe lists and a variant of this kind names in Variant.Kernel.
var Name = sdk.NameOf(&kvpb.Store_ServiceDesc)

type kind struct{}

func (kind) Serves(kernel any) (host, device bool) {
	_, host = kernel.(Storer)
	_, device = kernel.(DeviceStorer)
	return host, device
}

// Register registers the store service; its StoreBatch is also what the
// doorbell runs and its calls what Bench times.
func (kind) Register(r grpc.ServiceRegistrar, s *sdk.Server) {
	srv := &server{Server: s}
	kvpb.RegisterStoreServer(r, srv)
	s.Benches(bencher{srv})
	if _, ok := s.Kernel().(Storer); ok {
		s.Ring(srv.ring)
	}
}

// server answers the store service from the plugin's attachment.
type server struct {
	kvpb.UnimplementedStoreServer
	*sdk.Server
	tables deviceTables // page tables on the device (device.go)
}

func (s *server) Store(ctx context.Context, req *kvpb.StoreRequest) (*kvpb.StoreResponse, error) {
	if _, err := s.StoreBatch(ctx, &kvpb.StoreBatchRequest{Calls: []*kvpb.StoreRequest{req}}); err != nil {
		return nil, err
	}
	return &kvpb.StoreResponse{}, nil
}

// StoreBatch runs the calls in order. On the CUDA backend they are all
// queued on the plugin's stream and waited for once, before the answer,
// so the harness sees every write.
func (s *server) StoreBatch(ctx context.Context, req *kvpb.StoreBatchRequest) (*kvpb.StoreBatchResponse, error) {
	start := time.Now()
	defer func() {
		ns := strconv.FormatInt(time.Since(start).Nanoseconds(), 10)
		grpc.SetTrailer(ctx, metadata.Pairs(protocol.HandlerTimeKey, ns))
	}()
	if err := s.storeBatch(ctx, req); err != nil {
		return nil, err
	}
	return &kvpb.StoreBatchResponse{}, nil
}

// ring runs a StoreBatch posted through the doorbell (sdk.Server.Ring).
func (s *server) ring(ctx context.Context, data []byte) error {
	var req kvpb.StoreBatchRequest
	if err := proto.Unmarshal(data, &req); err != nil {
		return status.Errorf(codes.InvalidArgument, "doorbell request: %v", err)
	}
	return s.storeBatch(ctx, &req)
}

// storeBatch is StoreBatch without its answer: the RPC's and the
// doorbell's.
func (s *server) storeBatch(ctx context.Context, req *kvpb.StoreBatchRequest) error {
	s.Lock()
	defer s.Unlock()
	if s.Device() != nil {
		return s.storeBatchDevice(ctx, req.Calls)
	}
	return s.storeBatchHost(ctx, req.Calls)
}

func (s *server) storeBatchHost(ctx context.Context, calls []*kvpb.StoreRequest) error {
	k, ok := s.Kernel().(Storer)
	if !ok {
		return noHostStore(s.Name())
	}
	for i, r := range calls {
		call, err := s.storeCall(r)
		if err != nil {
			return callError(len(calls), i, err)
		}
		if err := k.Store(ctx, call); err != nil {
			return status.Errorf(codes.Aborted, "store kernel failed%s: %v", callLabel(len(calls), i), err)
		}
	}
	return nil
}

// noHostStore refuses a store on host memory to a plugin whose store runs
// on CUDA only.
func noHostStore(name string) error {
	return status.Errorf(codes.Unimplemented, "%s has no store kernel for host memory", name)
}

// callError keeps a single Store's error as it is and prefixes a batch's
// with the failing call's index.
func callError(calls, i int, err error) error {
	if calls == 1 {
		return err
	}
	return fmt.Errorf("call %d: %w", i, err)
}

func callLabel(calls, i int) string {
	if calls == 1 {
		return ""
	}
	return fmt.Sprintf(" on call %d", i)
}

// checkStore validates a store request against the attached arena and
// returns its pool. It is the same check for both backends.
func (s *server) checkStore(req *kvpb.StoreRequest) (sdk.Pool, error) {
	if err := s.checkSlotBits(req); err != nil {
		return sdk.Pool{}, err
	}
	if !s.Attached() {
		return sdk.Pool{}, status.Error(codes.FailedPrecondition, "store before attach")
	}
	p, err := s.Pool(req.Pool)
	if err != nil {
		return sdk.Pool{}, err
	}
	c, n := int(req.Capacity), int(req.Valid)
	if c < 1 || n > c {
		return sdk.Pool{}, sdk.BadRequest("capacity %d, valid %d: want 1 <= capacity and valid <= capacity", c, n)
	}
	if err := s.InStaging(req.RowsOffset, c*rowElems(req, p), 2); err != nil {
		return sdk.Pool{}, fmt.Errorf("rows: %w", err)
	}
	if err := s.InStaging(req.LocOffset, c, slotBytes(req)); err != nil {
		return sdk.Pool{}, fmt.Errorf("loc: %w", err)
	}
	return p, nil
}

// rowElems is the elements of one staged row: head_dim unless the
// request says otherwise.
func rowElems(req *kvpb.StoreRequest, p sdk.Pool) int {
	if req.GetRowElems() > 0 {
		return int(req.GetRowElems())
	}
	return p.Layout.HeadDim
}

// scales are a request's static scales by tensor, nil when it has none.
func scales(req *kvpb.StoreRequest) map[string][]float32 {
	if len(req.GetScales()) == 0 {
		return nil
	}
	out := make(map[string][]float32, len(req.Scales))
	for _, s := range req.Scales {
		out[s.GetTensor()] = s.GetValues()
	}
	return out
}

// slotBytes is the size of one staged slot: 8, or 4 for 32-bit slots.
func slotBytes(req *kvpb.StoreRequest) int {
	if req.GetSlotBits() == 32 {
		return 4
	}
	return 8
}

// checkSlotBits refuses loc staged at another width than the kernel
// declared: a kernel reading int64 slots from int32 staging reads two
// slots as one.
func (s *server) checkSlotBits(req *kvpb.StoreRequest) error {
	got, want := int(req.GetSlotBits()), s.SlotBits()
	if got == 0 {
		got = 64
	}
	if got != want {
		return sdk.BadRequest("loc staged as %d-bit slots, but %s reads %d-bit slots (it declares slot_bits %d); stage loc at the declared width",
			got, s.Name(), want, want)
	}
	return nil
}

func (s *server) storeCall(req *kvpb.StoreRequest) (*Call, error) {
	p, err := s.checkStore(req)
	if err != nil {
		return nil, err
	}
	c, n := int(req.Capacity), int(req.Valid)
	call := &Call{Variant: s.Variant(), Pool: p, Arena: s.Region(p), Capacity: c, Valid: n,
		Padding: req.Padding, Rows: sdk.Staged[uint16](s.Server, req.RowsOffset, c*rowElems(req, p)),
		RowElems: rowElems(req, p), Scales: scales(req),
		SlotBits: 64, Graph: req.Graph}
	if slotBytes(req) == 4 {
		call.SlotBits, call.Loc32 = 32, sdk.Staged[int32](s.Server, req.LocOffset, c)
		call.Loc = make([]int64, c)
		for i, v := range call.Loc32 {
			call.Loc[i] = int64(v)
		}
	} else {
		call.Loc = sdk.Staged[int64](s.Server, req.LocOffset, c)
	}
	if req.GetPageTable() != nil {
		if call.Table, err = s.pageTable(req.GetPageTable(), p, c); err != nil {
			return nil, err
		}
	}
	return call, nil
}

// pageTable checks a call's page table, as the kernel will index it
// unchecked: the plugin takes the mode, the CSR is well formed, each page
// lies in the pool and each row names a request.
func (s *server) pageTable(t *kvpb.PageTable, p sdk.Pool, capacity int) (*PageTable, error) {
	if !slices.Contains(s.Addressing(), ByPageTable) {
		return nil, sdk.BadRequest("a page-table call, but %s declares slot lists only (Plugin.Addressing); declare ByPageTable to take it", s.Name())
	}
	out := &PageTable{PageSize: p.Layout.PageSize, Indptr: t.KvIndptr, Indices: t.KvIndices, LastPageLen: t.KvLastPageLen,
		BatchIndices: t.BatchIndices, Positions: t.Positions}
	r := len(out.Indptr) - 1
	switch {
	case r < 0 || out.Indptr[0] != 0 || int(out.Indptr[r]) != len(out.Indices):
		return nil, sdk.BadRequest("page table: kv_indptr must run from 0 to len(kv_indices) = %d", len(out.Indices))
	case len(out.LastPageLen) != r:
		return nil, sdk.BadRequest("page table: %d kv_last_page_len for %d requests", len(out.LastPageLen), r)
	case len(out.BatchIndices) != capacity || len(out.Positions) != capacity:
		return nil, sdk.BadRequest("page table: %d batch_indices and %d positions for %d rows", len(out.BatchIndices), len(out.Positions), capacity)
	}
	for b := range r {
		if out.Indptr[b+1] < out.Indptr[b] {
			return nil, sdk.BadRequest("page table: kv_indptr decreases at request %d", b)
		}
	}
	for k, pg := range out.Indices {
		if pg < 0 || int(pg) >= p.Pages() {
			return nil, sdk.BadRequest("page table: kv_indices[%d] = %d outside the pool's %d pages", k, pg, p.Pages())
		}
	}
	for i, b := range out.BatchIndices {
		if b < 0 || int(b) >= r {
			return nil, sdk.BadRequest("page table: batch_indices[%d] = %d outside the %d requests", i, b, r)
		}
	}
	return out, nil
}
