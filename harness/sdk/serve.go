package sdk

import (
	"fmt"
	"os"
	"strconv"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/go-plugin"
	"google.golang.org/grpc"

	"github.com/kvharness/kvharness/harness/protocol"
)

// Serve runs the plugin until the harness disconnects. Call it from main.
func Serve(p Plugin) {
	if err := p.check(); err != nil {
		fmt.Fprintf(os.Stderr, "kvharness sdk: %v\n", err)
		os.Exit(1)
	}
	widenDeviceQueues(p)
	warmGPU(p)
	plugin.Serve(&plugin.ServeConfig{
		HandshakeConfig: protocol.Handshake,
		// go-plugin logs its own progress at debug level to stderr, which
		// the harness shows when a plugin fails: keep only what matters.
		Logger:  hclog.New(&hclog.LoggerOptions{Output: os.Stderr, Level: hclog.Warn}),
		Plugins: protocol.Plugins((&Server{p: p, rings: true}).register),
		GRPCServer: func(opts []grpc.ServerOption) *grpc.Server {
			opts = append(opts, grpc.MaxRecvMsgSize(protocol.MaxMessageBytes), grpc.MaxSendMsgSize(protocol.MaxMessageBytes))
			return grpc.NewServer(opts...)
		},
	})
}

// Services returns the plugin's services without serving them: a fuzz
// test links a Go kernel into its own process this way (plugin.InProcess),
// so coverage guidance sees the kernel's branches. Each registration makes
// a fresh server, as a fresh process would. It offers no doorbell: a
// caller in the same process needs none.
// A plugin that lists a kind its kernel does not implement panics here:
// Serve reports it as the plugin starts.
func Services(p Plugin) protocol.Services {
	if err := p.check(); err != nil {
		panic(err)
	}
	return func(r grpc.ServiceRegistrar) { (&Server{p: p}).register(r) }
}

// warmGPU opens the GPU protocol.WarmGPUEnv names, in the background, when
// the kernel serves device memory: the harness attaches its arenas there
// next, and the attach then finds the context made. The open's error
// comes on the returned channel (nil when nothing was opened); the attach
// meets it again, and reports it, by its own open.
func warmGPU(p Plugin) <-chan error {
	ordinal, err := strconv.Atoi(os.Getenv(protocol.WarmGPUEnv))
	if _, device := p.serves(); err != nil || ordinal < 0 || !device {
		return nil
	}
	done := make(chan error, 1)
	go func() {
		_, err := openGPU(ordinal)
		done <- err
	}()
	return done
}
