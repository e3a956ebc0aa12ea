// Package protocol is the contract between the harness and a kernel plugin:
// the go-plugin handshake, the plugin set, and the gRPC service generated
// from kvharness.proto into package kvpb.
//
// A plugin is any executable that speaks go-plugin's gRPC protocol with this
// handshake and serves kvpb.Kernel. Go plugins use package sdk and never
// touch this package directly; other languages implement the handshake line
// and the service from kvharness.proto.
package protocol

import (
	"context"

	"github.com/hashicorp/go-plugin"
	"google.golang.org/grpc"

	"github.com/kvharness/kvharness/harness/protocol/kvpb"
)

// Version is the application protocol version. Bump it on any change to
// kvharness.proto that an old plugin or harness would misread.
const Version = 1

// PluginName is the single plugin a kvharness plugin process serves.
const PluginName = "kernel"

// MaxMessageBytes raises gRPC's 4 MiB default: a transfer's descriptor list
// for many rooms can be large.
const MaxMessageBytes = 64 << 20

// Handshake is checked by both sides before any RPC. The cookie is not a
// secret; it stops a user from running a plugin binary by hand.
var Handshake = plugin.HandshakeConfig{
	ProtocolVersion:  Version,
	MagicCookieKey:   "KVHARNESS_PLUGIN_COOKIE",
	MagicCookieValue: "kv-cache-kernels-under-test",
}

// WarmGPUEnv, in a plugin process's environment, is the ordinal of the GPU
// the harness will attach its arenas on (runs on the cuda backend). A
// plugin that serves device memory may open the device as it starts, so
// that the first Attach finds the CUDA context made: creating one costs a
// few hundred milliseconds, which then overlap the harness's own setup.
// It is a hint: a plugin that ignores it opens the device at Attach.
const WarmGPUEnv = "KVHARNESS_WARM_GPU"

// KernelPlugin adapts kvpb.Kernel to go-plugin. The host leaves Impl nil.
type KernelPlugin struct {
	plugin.NetRPCUnsupportedPlugin
	Impl kvpb.KernelServer
}

var _ plugin.GRPCPlugin = (*KernelPlugin)(nil)

// GRPCServer registers the kernel service in the plugin process.
func (p *KernelPlugin) GRPCServer(_ *plugin.GRPCBroker, s *grpc.Server) error {
	kvpb.RegisterKernelServer(s, p.Impl)
	return nil
}

// GRPCClient returns a kvpb.KernelClient in the harness process.
func (p *KernelPlugin) GRPCClient(_ context.Context, _ *plugin.GRPCBroker, c *grpc.ClientConn) (any, error) {
	return kvpb.NewKernelClient(c), nil
}

// Plugins is the plugin set both sides agree on.
func Plugins(server kvpb.KernelServer) plugin.PluginSet {
	return plugin.PluginSet{PluginName: &KernelPlugin{Impl: server}}
}

// HandlerTimeKey names the trailer in which a plugin may report how long
// its StoreBatch handler took, in nanoseconds: the harness reports it beside
// the call's time, to tell the plugin's work from the transport's.
const HandlerTimeKey = "kvharness-handler-ns"

// Kernel names a kernel kind on the wire: what DescribeResponse.kernels
// lists and Variant.kernel says. The harness has one package per kind
// (harness/kernels/...); the SDKs serve them.
type Kernel string

// The kernel kinds.
const (
	Store    Kernel = "store"
	Read     Kernel = "read"
	Transfer Kernel = "transfer"
	Load     Kernel = "load" // layer loads and stream ordering
)
