package plugin

import (
	"context"
	"fmt"
	"strings"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	"github.com/kvharness/kvharness/harness/protocol"
	"github.com/kvharness/kvharness/harness/protocol/kvpb"
)

// InProcess runs a plugin's services linked into this process as a
// Plugin, with no process, socket or transport in between: a call runs
// the service's handler on the caller's goroutine. A panic in the kernel
// is a panic of the caller: go test -fuzz records that as a crasher.
func InProcess(name string, services protocol.Services) *Plugin {
	conn := newLocalConn(services)
	return &Plugin{Name: name, Path: "(in process)", conn: conn, base: kvpb.NewPluginClient(conn),
		stderr: newTail(16 << 10), opts: Options{CallTimeout: DefaultCallTimeout}, services: services}
}

// Servers finds a bundled Go plugin's services by name, for running it in
// process: package plugins' table of bundled code, which lives above the
// harness and is handed down.
type Servers func(name string) (services protocol.Services, ok bool)

// InProcessOf is InProcess; its Spawn registers the services again on a
// connection of their own, so that a kind that plays two processes
// (pdasync) runs in process too. The Go SDK's services make a fresh
// server each time they are registered.
func InProcessOf(name string, services protocol.Services) *Plugin { return InProcess(name, services) }

// localConn is a grpc.ClientConnInterface whose calls go straight to the
// handlers of services registered on it (it is their
// grpc.ServiceRegistrar): the generated clients of every kind work on it
// unchanged. Requests and answers are copied, as a transport would: a
// handler never shares memory with its caller.
type localConn struct {
	services map[string]localService
}

type localService struct {
	desc *grpc.ServiceDesc
	impl any
}

var (
	_ grpc.ClientConnInterface = (*localConn)(nil)
	_ grpc.ServiceRegistrar    = (*localConn)(nil)
)

func newLocalConn(services protocol.Services) *localConn {
	c := &localConn{services: map[string]localService{}}
	services(c)
	return c
}

// RegisterService implements grpc.ServiceRegistrar.
func (c *localConn) RegisterService(desc *grpc.ServiceDesc, impl any) {
	c.services[desc.ServiceName] = localService{desc, impl}
}

// Invoke implements grpc.ClientConnInterface: it runs method's handler on
// a copy of args and copies its answer into reply. An unknown service or
// method is answered as a gRPC server answers it, Unimplemented.
func (c *localConn) Invoke(ctx context.Context, method string, args, reply any, _ ...grpc.CallOption) error {
	service, name, _ := strings.Cut(strings.TrimPrefix(method, "/"), "/")
	s, ok := c.services[service]
	if !ok {
		return status.Errorf(codes.Unimplemented, "unknown service %s", service)
	}
	for _, m := range s.desc.Methods {
		if m.MethodName != name {
			continue
		}
		dec := func(in any) error {
			proto.Merge(in.(proto.Message), args.(proto.Message))
			return nil
		}
		out, err := m.Handler(s.impl, ctx, dec, nil)
		if err != nil {
			return err
		}
		if m, ok := out.(proto.Message); ok && m.ProtoReflect().IsValid() {
			proto.Merge(reply.(proto.Message), m)
		}
		return nil
	}
	return status.Errorf(codes.Unimplemented, "unknown method %s for service %s", name, service)
}

// NewStream implements grpc.ClientConnInterface: the protocol has no
// streaming calls.
func (c *localConn) NewStream(context.Context, *grpc.StreamDesc, string, ...grpc.CallOption) (grpc.ClientStream, error) {
	return nil, fmt.Errorf("in-process plugins serve no streams")
}
