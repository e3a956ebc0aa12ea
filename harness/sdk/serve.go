package sdk

import (
	"github.com/hashicorp/go-plugin"
	"google.golang.org/grpc"

	"github.com/kvharness/kvharness/harness/protocol"
)

// Serve runs the plugin until the harness disconnects. Call it from main.
func Serve(p Plugin) {
	plugin.Serve(&plugin.ServeConfig{
		HandshakeConfig: protocol.Handshake,
		Plugins:         protocol.Plugins(&server{p: p}),
		GRPCServer: func(opts []grpc.ServerOption) *grpc.Server {
			opts = append(opts, grpc.MaxRecvMsgSize(protocol.MaxMessageBytes), grpc.MaxSendMsgSize(protocol.MaxMessageBytes))
			return grpc.NewServer(opts...)
		},
	})
}
