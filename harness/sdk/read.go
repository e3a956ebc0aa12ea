package sdk

import (
	"context"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/kvharness/kvharness/harness/protocol/kvpb"
)

// ReadCall is one read: for every request r, score the query
// Queries[r·D : (r+1)·D] against the key of each slot in the request's
// token list, Tokens[Indptr[r]:Indptr[r+1]], and write the K best.
//
// The score of a slot is q·k, with k decoded from the pool's layout: bf16
// elements as they are, e4m3 codes times their scale. The result of
// request r goes to OutSlots[r·K : (r+1)·K] and OutScores[r·K : (r+1)·K],
// best first: higher score first, and of two equal scores (+0 and -0 are
// equal) the lower slot first. A list shorter than K leaves its tail as
// slot -1 and score NaN.
//
// The SDK has checked every offset against staging, that Indptr starts at
// 0 and never decreases, that every token is a slot of the pool, and that
// the out windows overlap neither each other nor the inputs. A read kernel
// is read-only: it writes the out windows and nothing else, neither the
// pool (not even as scratch space it later restores) nor its inputs.
type ReadCall struct {
	Variant   string
	Pool      Pool
	Arena     []byte    // the whole arena, guards and staging included
	Requests  int       //
	K         int       // results per request
	Queries   []uint16  // Requests × HeadDim bf16 bit patterns
	Indptr    []int64   // Requests+1 list bounds into Tokens
	Tokens    []int64   // Indptr[Requests] slots
	OutSlots  []int64   // Requests × K
	OutScores []float32 // Requests × K
}

// List returns request r's token list.
func (c *ReadCall) List(r int) []int64 { return c.Tokens[c.Indptr[r]:c.Indptr[r+1]] }

// Query returns request r's query.
func (c *ReadCall) Query(r int) []uint16 {
	d := c.Pool.Layout.HeadDim
	return c.Queries[r*d : (r+1)*d]
}

// Reader is a read kernel over host memory.
type Reader interface {
	Read(ctx context.Context, call *ReadCall) error
}

// Read checks the request and runs the kernel on the attached backend. On
// CUDA it waits for the stream before it answers, so the harness reads the
// finished outputs.
func (s *server) Read(ctx context.Context, req *kvpb.ReadRequest) (*kvpb.ReadResponse, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var err error
	if s.dev != nil {
		err = s.readDevice(ctx, req)
	} else {
		err = s.readHost(ctx, req)
	}
	if err != nil {
		return nil, err
	}
	return &kvpb.ReadResponse{}, nil
}

func (s *server) readHost(ctx context.Context, req *kvpb.ReadRequest) error {
	k, ok := s.p.Kernel.(Reader)
	if !ok {
		return status.Errorf(codes.Unimplemented, "%s has no read kernel for host memory", s.p.Name)
	}
	call, err := s.readCall(req)
	if err != nil {
		return err
	}
	if err := k.Read(ctx, call); err != nil {
		return kernelFailed("read", err)
	}
	return nil
}

// readCall checks a request on shared memory and views its windows.
func (s *server) readCall(req *kvpb.ReadRequest) (*ReadCall, error) {
	p, sh, err := s.checkRead(req, s.hostInt64s)
	if err != nil {
		return nil, err
	}
	r, k := sh.requests, sh.k
	return &ReadCall{Variant: s.variant, Pool: p, Arena: s.regionOf(p), Requests: r, K: k,
		Queries:   stagingSlice[uint16](s, req.QueriesOffset, r*p.Layout.HeadDim),
		Indptr:    stagingSlice[int64](s, req.IndptrOffset, r+1),
		Tokens:    stagingSlice[int64](s, req.TokensOffset, sh.tokens),
		OutSlots:  stagingSlice[int64](s, req.OutSlotsOffset, r*k),
		OutScores: stagingSlice[float32](s, req.OutScoresOffset, r*k)}, nil
}

// hostInt64s reads n int64s at a staging offset of a shared-memory arena.
func (s *server) hostInt64s(off uint64, n int) ([]int64, error) {
	return stagingSlice[int64](s, off, n), nil
}
