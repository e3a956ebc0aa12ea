package sdk

import (
	"os"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/go-plugin"
	"google.golang.org/grpc"

	"github.com/kvharness/kvharness/harness/protocol"
	"github.com/kvharness/kvharness/harness/protocol/kvpb"
)

// Serve runs the plugin until the harness disconnects. Call it from main.
func Serve(p Plugin) {
	widenDeviceQueues()
	plugin.Serve(&plugin.ServeConfig{
		HandshakeConfig: protocol.Handshake,
		// go-plugin logs its own progress at debug level to stderr, which
		// the harness shows when a plugin fails: keep only what matters.
		Logger:  hclog.New(&hclog.LoggerOptions{Output: os.Stderr, Level: hclog.Warn}),
		Plugins: protocol.Plugins(&server{p: p, rings: true}),
		GRPCServer: func(opts []grpc.ServerOption) *grpc.Server {
			opts = append(opts, grpc.MaxRecvMsgSize(protocol.MaxMessageBytes), grpc.MaxSendMsgSize(protocol.MaxMessageBytes))
			return grpc.NewServer(opts...)
		},
	})
}

// NewServer returns the plugin's kvpb.Kernel service without serving it:
// a fuzz test links a Go kernel into its own process this way, so coverage
// guidance sees the kernel's branches. It offers no doorbell: a server
// that wraps it answers StoreBatch its own way, which a doorbell served
// from inside would bypass.
func NewServer(p Plugin) kvpb.KernelServer { return &server{p: p} }
