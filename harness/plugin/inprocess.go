package plugin

import (
	"context"

	"google.golang.org/grpc"

	"github.com/kvharness/kvharness/harness/protocol/kvpb"
)

// InProcess wraps a kernel service linked into this process as a Plugin,
// with no process, socket or gRPC in between. A panic in the kernel is a
// panic of the caller: go test -fuzz records that as a crasher.
func InProcess(name string, srv kvpb.KernelServer) *Plugin {
	return &Plugin{Name: name, Path: "(in process)", kernel: direct{srv}, stderr: newTail(16 << 10),
		opts: Options{CallTimeout: DefaultCallTimeout}}
}

// Servers finds a bundled Go plugin's kernel by name, as a constructor of
// servers, for running it in process: package plugins' table of bundled
// code, which lives above the harness and is handed down.
type Servers func(name string) (newServer func() kvpb.KernelServer, ok bool)

// InProcessOf is InProcess on a server of newServer's, whose Spawn starts
// a second one: a kind that plays two processes (pdasync) runs in process
// too.
func InProcessOf(name string, newServer func() kvpb.KernelServer) *Plugin {
	p := InProcess(name, newServer())
	p.newServer = newServer
	return p
}

// direct calls a KernelServer as if it were a KernelClient.
type direct struct{ s kvpb.KernelServer }

var _ kvpb.KernelClient = direct{}

func (d direct) Describe(ctx context.Context, in *kvpb.DescribeRequest, _ ...grpc.CallOption) (*kvpb.DescribeResponse, error) {
	return d.s.Describe(ctx, in)
}

func (d direct) Attach(ctx context.Context, in *kvpb.AttachRequest, _ ...grpc.CallOption) (*kvpb.AttachResponse, error) {
	return d.s.Attach(ctx, in)
}

func (d direct) Detach(ctx context.Context, in *kvpb.DetachRequest, _ ...grpc.CallOption) (*kvpb.DetachResponse, error) {
	return d.s.Detach(ctx, in)
}

func (d direct) Store(ctx context.Context, in *kvpb.StoreRequest, _ ...grpc.CallOption) (*kvpb.StoreResponse, error) {
	return d.s.Store(ctx, in)
}

func (d direct) StoreBatch(ctx context.Context, in *kvpb.StoreBatchRequest, _ ...grpc.CallOption) (*kvpb.StoreBatchResponse, error) {
	return d.s.StoreBatch(ctx, in)
}

func (d direct) Read(ctx context.Context, in *kvpb.ReadRequest, _ ...grpc.CallOption) (*kvpb.ReadResponse, error) {
	return d.s.Read(ctx, in)
}

func (d direct) Transfer(ctx context.Context, in *kvpb.TransferRequest, _ ...grpc.CallOption) (*kvpb.TransferResponse, error) {
	return d.s.Transfer(ctx, in)
}

func (d direct) Bench(ctx context.Context, in *kvpb.BenchRequest, _ ...grpc.CallOption) (*kvpb.BenchResponse, error) {
	return d.s.Bench(ctx, in)
}

func (d direct) Load(ctx context.Context, in *kvpb.LoadRequest, _ ...grpc.CallOption) (*kvpb.LoadResponse, error) {
	return d.s.Load(ctx, in)
}

func (d direct) LoadBench(ctx context.Context, in *kvpb.LoadBenchRequest, _ ...grpc.CallOption) (*kvpb.LoadBenchResponse, error) {
	return d.s.LoadBench(ctx, in)
}
