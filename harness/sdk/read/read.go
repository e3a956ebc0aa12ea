// Package read serves the read kind: a kernel that scores queries
// against the keys of token lists and writes the top k (a sparse
// attention indexer's top-k), on host memory ([Reader]), CUDA memory
// ([DeviceReader]) or both. A plugin lists [Kind] in sdk.Plugin.Kinds.
package read

import (
	"context"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/kvharness/kvharness/harness/protocol/kvpb"
	"github.com/kvharness/kvharness/harness/sdk"
)

// Call is one read: for every request r, score the query
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
type Call struct {
	Variant   string
	Pool      sdk.Pool
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
func (c *Call) List(r int) []int64 { return c.Tokens[c.Indptr[r]:c.Indptr[r+1]] }

// Query returns request r's query.
func (c *Call) Query(r int) []uint16 {
	d := c.Pool.Layout.HeadDim
	return c.Queries[r*d : (r+1)*d]
}

// Reader is a read kernel over host memory.
type Reader interface {
	Read(ctx context.Context, call *Call) error
}

// Kind is the read kind: a plugin lists it in sdk.Plugin.Kinds to serve
// its Kernel's Reader, DeviceReader or both.
var Kind sdk.Kind = kind{}

// Name is the kind's name, its service's (kvharness.v1.Read): what
// Describe lists and a variant of this kind names in Variant.Kernel.
var Name = sdk.NameOf(&kvpb.Read_ServiceDesc)

type kind struct{}

func (kind) Serves(kernel any) (host, device bool) {
	_, host = kernel.(Reader)
	_, device = kernel.(DeviceReader)
	return host, device
}

func (kind) Register(r grpc.ServiceRegistrar, s *sdk.Server) {
	kvpb.RegisterReadServer(r, &server{Server: s})
}

// server answers the read service from the plugin's attachment.
type server struct {
	kvpb.UnimplementedReadServer
	*sdk.Server
}

// Variant declares a variant that changes only the read kernel: its store
// is the plugin's correct one. The harness runs read properties against
// it (Variant.Kernel, sent in Describe), so a read mutant is never counted
// as a store mutant that survived.
func Variant(name, doc string) sdk.Variant {
	return sdk.Variant{Name: name, Doc: doc, Kernel: Name}
}

// Read checks the request and runs the kernel on the attached backend. On
// CUDA it waits for the stream before it answers, so the harness reads the
// finished outputs.
func (s *server) Read(ctx context.Context, req *kvpb.ReadRequest) (*kvpb.ReadResponse, error) {
	s.Lock()
	defer s.Unlock()
	var err error
	if s.Device() != nil {
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
	k, ok := s.Kernel().(Reader)
	if !ok {
		return status.Errorf(codes.Unimplemented, "%s has no read kernel for host memory", s.Name())
	}
	call, err := s.readCall(req)
	if err != nil {
		return err
	}
	if err := k.Read(ctx, call); err != nil {
		return sdk.KernelFailed("read", err)
	}
	return nil
}

// readCall checks a request on shared memory and views its windows.
func (s *server) readCall(req *kvpb.ReadRequest) (*Call, error) {
	p, sh, err := s.checkRead(req, s.hostInt64s)
	if err != nil {
		return nil, err
	}
	r, k := sh.requests, sh.k
	return &Call{Variant: s.Variant(), Pool: p, Arena: s.Region(p), Requests: r, K: k,
		Queries:   sdk.Staged[uint16](s.Server, req.QueriesOffset, r*p.Layout.HeadDim),
		Indptr:    sdk.Staged[int64](s.Server, req.IndptrOffset, r+1),
		Tokens:    sdk.Staged[int64](s.Server, req.TokensOffset, sh.tokens),
		OutSlots:  sdk.Staged[int64](s.Server, req.OutSlotsOffset, r*k),
		OutScores: sdk.Staged[float32](s.Server, req.OutScoresOffset, r*k)}, nil
}

// hostInt64s reads n int64s at a staging offset of a shared-memory arena.
func (s *server) hostInt64s(off uint64, n int) ([]int64, error) {
	return sdk.Staged[int64](s.Server, off, n), nil
}

// IsVariant reports whether a variant changes the read kernel.
func IsVariant(v sdk.Variant) bool { return v.Kernel == Name }
