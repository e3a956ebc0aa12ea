// Package protocol is the contract between the harness and a kernel plugin:
// the go-plugin handshake, the plugin set, and the gRPC services generated
// into package kvpb from kvharness.proto (the base service every plugin
// serves) and one .proto file per kernel kind (store.proto, read.proto, ...).
//
// A plugin is any executable that speaks go-plugin's gRPC protocol with this
// handshake and serves kvpb.Plugin beside the services of the kinds it
// implements, all on its one connection: the services it registers are the
// kinds it advertises (KernelOf). Go plugins use package sdk and never
// touch this package directly; other languages implement the handshake line
// and the services from the .proto files.
package protocol

import (
	"context"
	"strings"

	"github.com/hashicorp/go-plugin"
	"google.golang.org/grpc"
)

// Version is the application protocol version. Bump it on any change to
// the .proto files that an old plugin or harness would misread. Version 2
// split the one Kernel service into the base Plugin service and one
// service per kind, and gave pool descriptions their buffer's fields.
const Version = 2

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

// Services registers a plugin's gRPC services (the base kvpb.Plugin and
// one service per kind it implements) on a server: go-plugin's, or the
// harness's in-process connection.
type Services func(grpc.ServiceRegistrar)

// KernelPlugin adapts a plugin's services to go-plugin. The host leaves
// Register nil: its client is the connection itself, from which each kind
// makes the client of its own service.
type KernelPlugin struct {
	plugin.NetRPCUnsupportedPlugin
	Register Services
}

var _ plugin.GRPCPlugin = (*KernelPlugin)(nil)

// GRPCServer registers the plugin's services in the plugin process.
func (p *KernelPlugin) GRPCServer(_ *plugin.GRPCBroker, s *grpc.Server) error {
	p.Register(s)
	return nil
}

// GRPCClient returns the connection to the plugin process, a
// grpc.ClientConnInterface: the base service's client and every kind's
// are made from it.
func (p *KernelPlugin) GRPCClient(_ context.Context, _ *plugin.GRPCBroker, c *grpc.ClientConn) (any, error) {
	return grpc.ClientConnInterface(c), nil
}

// Plugins is the plugin set both sides agree on.
func Plugins(register Services) plugin.PluginSet {
	return plugin.PluginSet{PluginName: &KernelPlugin{Register: register}}
}

// HandlerTimeKey names the trailer in which a plugin may report how long
// its StoreBatch handler took, in nanoseconds: the harness reports it beside
// the call's time, to tell the plugin's work from the transport's.
const HandlerTimeKey = "kvharness-handler-ns"

// Kernel names a kernel kind on the wire: what DescribeResponse.kernels
// lists and Variant.kernel says, its service's name in lower case
// (KernelOf). The harness has one package per kind (harness/kernels/...),
// which declares its name (store.Name); the SDKs serve them.
type Kernel string

// ServicePrefix is the full name of the protocol's services up to their
// own names: kvharness.v1.Plugin is the base service, every other
// kvharness.v1 service a kind's.
const ServicePrefix = "kvharness.v1."

// BaseService is the full name of the service every plugin serves.
const BaseService = ServicePrefix + "Plugin"

// KernelOf is the kind a service serves: its name in lower case
// (kvharness.v1.Store serves "store", kvharness.v1.PDAsync "pdasync"); ok
// is false for the base service and for services outside the protocol
// (go-plugin's own, health).
func KernelOf(service string) (k Kernel, ok bool) {
	name, ok := strings.CutPrefix(service, ServicePrefix)
	if !ok || service == BaseService || name == "" {
		return "", false
	}
	return Kernel(strings.ToLower(name)), true
}
