package sdk

import (
	"context"
	"fmt"
	"strconv"
	"time"
	"unsafe"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/kvharness/kvharness/harness/protocol"
	"github.com/kvharness/kvharness/harness/protocol/kvpb"
)

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
	s.mu.Lock()
	defer s.mu.Unlock()
	defer func() {
		ns := strconv.FormatInt(time.Since(start).Nanoseconds(), 10)
		grpc.SetTrailer(ctx, metadata.Pairs(protocol.HandlerTimeKey, ns))
	}()
	var err error
	if s.dev != nil {
		err = s.storeBatchDevice(ctx, req.Calls)
	} else {
		err = s.storeBatchHost(ctx, req.Calls)
	}
	if err != nil {
		return nil, err
	}
	return &kvpb.StoreBatchResponse{}, nil
}

func (s *server) storeBatchHost(ctx context.Context, calls []*kvpb.StoreRequest) error {
	k, ok := s.p.Kernel.(Storer)
	if !ok {
		return status.Errorf(codes.Unimplemented, "%s has no store kernel for host memory", s.p.Name)
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
func (s *server) checkStore(req *kvpb.StoreRequest) (Pool, error) {
	if err := s.checkSlotBits(req); err != nil {
		return Pool{}, err
	}
	if !s.attached() {
		return Pool{}, status.Error(codes.FailedPrecondition, "store before attach")
	}
	if int(req.Pool) >= len(s.pools) {
		return Pool{}, badRequest("pool %d: only %d attached", req.Pool, len(s.pools))
	}
	p := s.pools[req.Pool]
	c, n := int(req.Capacity), int(req.Valid)
	if c < 1 || n > c {
		return Pool{}, badRequest("capacity %d, valid %d: want 1 <= capacity and valid <= capacity", c, n)
	}
	if err := s.inStaging(req.RowsOffset, c*p.Layout.HeadDim, 2); err != nil {
		return Pool{}, fmt.Errorf("rows: %w", err)
	}
	if err := s.inStaging(req.LocOffset, c, slotBytes(req)); err != nil {
		return Pool{}, fmt.Errorf("loc: %w", err)
	}
	return p, nil
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
	got, want := int(req.GetSlotBits()), s.slotBits(s.variant)
	if got == 0 {
		got = 64
	}
	if got != want {
		return badRequest("loc staged as %d-bit slots, but %s reads %d-bit slots (it declares slot_bits %d); stage loc at the declared width",
			got, s.p.Name, want, want)
	}
	return nil
}

// slotBits is the declared slot width for a variant: the variant's, else
// the plugin's, 64 when neither says.
func (s *server) slotBits(variant string) int {
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

func (s *server) storeCall(req *kvpb.StoreRequest) (*StoreCall, error) {
	p, err := s.checkStore(req)
	if err != nil {
		return nil, err
	}
	c, n := int(req.Capacity), int(req.Valid)
	call := &StoreCall{Variant: s.variant, Pool: p, Arena: s.regionOf(p), Capacity: c, Valid: n,
		Padding: req.Padding, Rows: stagingSlice[uint16](s, req.RowsOffset, c*p.Layout.HeadDim),
		SlotBits: 64, Graph: req.Graph}
	if slotBytes(req) == 4 {
		call.SlotBits, call.Loc32 = 32, stagingSlice[int32](s, req.LocOffset, c)
		call.Loc = make([]int64, c)
		for i, v := range call.Loc32 {
			call.Loc[i] = int64(v)
		}
	} else {
		call.Loc = stagingSlice[int64](s, req.LocOffset, c)
	}
	return call, nil
}

// inStaging checks that n elements of size bytes at off lie inside the
// staging window and are aligned for their type.
func (s *server) inStaging(off uint64, n, size int) error {
	end := off + uint64(n*size)
	if off < uint64(s.staging.off) || end > uint64(s.staging.end()) || end < off || n < 0 {
		return badRequest("[%d,%d) outside staging [%d,%d)", off, end, s.staging.off, s.staging.end())
	}
	if off%uint64(size) != 0 {
		return badRequest("offset %d not aligned to %d bytes", off, size)
	}
	return nil
}

// stagingSlice views n elements of T at a staging offset that inStaging
// accepted.
func stagingSlice[T uint16 | int32 | int64 | float32](s *server, off uint64, n int) []T {
	if n == 0 {
		return nil
	}
	return unsafe.Slice((*T)(unsafe.Pointer(&s.arena[off])), n)
}
