package read

import (
	"context"
	"encoding/binary"
	"fmt"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/kvharness/kvharness/harness/cuda"
	"github.com/kvharness/kvharness/harness/protocol/kvpb"
	"github.com/kvharness/kvharness/harness/sdk"
)

// DeviceCall is one read on a CUDA arena: the device-memory twin of
// [Call], with the same contract. Every pointer is a device address
// inside the harness's arena.
type DeviceCall struct {
	Variant    string
	Pool       sdk.Pool
	Device     *cuda.Device
	Stream     *cuda.Stream // enqueue here, and only here
	Arena      cuda.Ptr     // device address of arena offset 0; slot 0's page is Arena + Pool.Base
	Requests   int
	K          int
	TokenCount int      // Indptr[Requests], known on the host
	Queries    cuda.Ptr // Requests × HeadDim bf16
	Indptr     cuda.Ptr // Requests+1 int64
	Tokens     cuda.Ptr // TokenCount int64 slots
	OutSlots   cuda.Ptr // Requests × K int64
	OutScores  cuda.Ptr // Requests × K float32
}

// PoolBase is the device address of slot 0's page.
func (c *DeviceCall) PoolBase() cuda.Ptr { return c.Arena.Add(c.Pool.Base) }

// DeviceReader is a read kernel that runs on the GPU. ReadDevice only
// enqueues work on c.Stream; the SDK synchronises the stream before it
// answers the harness. Reads are not captured into CUDA graphs, so a
// kernel may size its launch from the host-side fields.
type DeviceReader interface {
	ReadDevice(ctx context.Context, c *DeviceCall) error
}

// readDevice checks the request (copying the list bounds and tokens out of
// the device to do so), queues the kernel and waits for it. It waits even
// after a failed launch, so nothing is in flight when the harness reads.
func (s *server) readDevice(ctx context.Context, req *kvpb.ReadRequest) error {
	k, ok := s.Kernel().(DeviceReader)
	if !ok {
		return status.Errorf(codes.Unimplemented,
			"%s has no CUDA read kernel (its Kernel does not implement read.DeviceReader): read with the shm backend (--backend cpu)", s.Name())
	}
	call, err := s.deviceReadCall(req)
	if err != nil {
		return err
	}
	qerr := k.ReadDevice(ctx, call)
	return s.Device().Settle("read", qerr)
}

func (s *server) deviceReadCall(req *kvpb.ReadRequest) (*DeviceCall, error) {
	p, sh, err := s.checkRead(req, s.deviceInt64s)
	if err != nil {
		return nil, err
	}
	d := s.Device()
	at := func(off uint64) cuda.Ptr { return d.Base().Add(int(off)) }
	return &DeviceCall{Variant: s.Variant(), Pool: p, Device: d.GPU(), Stream: d.Stream(), Arena: d.Base(),
		Requests: sh.requests, K: sh.k, TokenCount: sh.tokens,
		Queries: at(req.QueriesOffset), Indptr: at(req.IndptrOffset), Tokens: at(req.TokensOffset),
		OutSlots: at(req.OutSlotsOffset), OutScores: at(req.OutScoresOffset)}, nil
}

// deviceInt64s copies n int64s at a staging offset out of the device arena.
func (s *server) deviceInt64s(off uint64, n int) ([]int64, error) {
	buf := make([]byte, 8*n)
	if err := s.Device().GPU().DtoH(buf, s.Device().Base().Add(int(off))); err != nil {
		return nil, status.Errorf(codes.Aborted, "read staging at %d: %v", off, err)
	}
	out := make([]int64, n)
	for i := range out {
		out[i] = int64(binary.LittleEndian.Uint64(buf[8*i:]))
	}
	return out, nil
}

// String names a device read for errors and logs.
func (c *DeviceCall) String() string {
	return fmt.Sprintf("read of %d requests, k %d, %d tokens on pool %q (%s)", c.Requests, c.K, c.TokenCount, c.Pool.Name, c.Pool.Layout.Name)
}
