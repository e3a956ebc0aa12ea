// Package kernel is the faulty plugin, which misbehaves on purpose, one
// way per variant, so the harness's fault handling can be tested against
// real process failures: a panic, a segmentation fault, an exit, a hang, a
// broken or incompatible handshake, inconsistent answers, a slow start, a
// leaked child process, writes into its input staging, and the hostile
// acts of hostile.go (other jobs' arenas, an escaping process, a planted
// file). Without a variant it is a correct bf16 store.
//
// Variants that act before any RPC (bad-handshake, wrong-version,
// slow-start) read KVHARNESS_VARIANT from the environment, which the
// harness sets for every plugin it starts.
package kernel

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"syscall"
	"time"
	"unsafe"

	"github.com/hashicorp/go-hclog"
	goplugin "github.com/hashicorp/go-plugin"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/kvharness/kvharness/harness/protocol"
	"github.com/kvharness/kvharness/harness/protocol/kvpb"
	"github.com/kvharness/kvharness/harness/sdk"
	"github.com/kvharness/kvharness/harness/sdk/store"
	"github.com/kvharness/kvharness/plugins/internal/cpustore"
)

var variants = []sdk.Variant{
	{Name: "panic", Doc: "panics inside Store"},
	{Name: "panic-escape", Doc: "panics inside Store with terminal escapes in its message (a title, a screen clear)"},
	{Name: "segfault", Doc: "dies of SIGSEGV inside Store, like a native kernel"},
	{Name: "exit", Doc: "calls exit(3) inside Store"},
	{Name: "hang", Doc: "never returns from Store"},
	{Name: "bad-handshake", Doc: "prints garbage instead of the go-plugin handshake"},
	{Name: "wrong-version", Doc: "speaks protocol version 99"},
	{Name: "garbage-response", Doc: "answers Attach with the wrong number of geometries"},
	{Name: "slow-start", Doc: "sleeps 60 s before the handshake"},
	{Name: "slow-attach", Doc: "answers Attach after 1 s, as a plugin compiling its kernels on a busy machine does, then stores correctly"},
	{Name: "hang-attach", Doc: "never answers Attach"},
	{Name: "leak-child", Doc: "starts a child process that outlives it, then panics"},
	{Name: "device-fault", Doc: "answers StoreBatch as the SDK does when a CUDA kernel faults (DATA_LOSS)"},
	{Name: "scribble-staging", Doc: "stores correctly but also overwrites its input rows"},
	{Name: "scribble-tail", Doc: "stores correctly but also overwrites the 64 bytes just past its staged rows"},
	{Name: "scan-fds", Doc: "stores correctly, but first tries to open other jobs' arenas through /proc/PPID/fd and the run directory's sockets"},
	{Name: "setsid-child", Doc: "stores correctly, but first starts a child in a session of its own, to outlive the run"},
	{Name: "plant-file", Doc: "stores correctly, but first writes a file into the harness's results folder"},
}

type kernel struct{}

func (kernel) Store(_ context.Context, c *store.Call) error {
	misbehave(c.Variant, c)
	d := c.Pool.Layout.HeadDim
	for i := range c.Valid {
		cpustore.PutBF16(c.Arena, c.Pool.Base+int(c.Loc[i])*2*d, c.Rows[i*d:(i+1)*d])
	}
	if c.Variant == "scribble-staging" && len(c.Rows) > 0 {
		c.Rows[0] = 0x7fc1 // a NaN no harness row holds
	}
	if c.Variant == "scribble-tail" && len(c.Rows) > 0 {
		past := unsafe.Slice(&c.Rows[0], len(c.Rows)+32)[len(c.Rows):] // staging the call does not use
		for i := range past {
			past[i] = 0x7fc1
		}
	}
	return nil
}

func misbehave(variant string, c *store.Call) {
	hostile(variant)
	switch variant {
	case "panic":
		panic(fmt.Sprintf("faulty: deliberate panic storing %d rows", c.Capacity))
	case "panic-escape":
		panic("faulty: \x1b]0;pwned\x07\x1b[2J\x1b[31mred\u009b1m deliberate panic")
	case "segfault":
		segfault()
	case "exit":
		os.Exit(3)
	case "hang":
		select {}
	case "leak-child":
		cmd := exec.Command("sleep", "600")
		cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr
		cmd.Start()
		panic(fmt.Sprintf("faulty: left child %d behind", cmd.Process.Pid))
	}
}

// segfault dies of SIGSEGV the way a native kernel does: the Go runtime's
// handler would turn the signal into a panic and exit 2, so the default
// disposition is restored first.
func segfault() {
	var dfl [4]uint64 // struct sigaction: handler SIG_DFL, flags, restorer, mask
	syscall.RawSyscall6(syscall.SYS_RT_SIGACTION, uintptr(syscall.SIGSEGV), uintptr(unsafe.Pointer(&dfl)), 0, 8, 0, 0)
	syscall.Kill(os.Getpid(), syscall.SIGSEGV)
	time.Sleep(time.Second)
}

func geometry(variant string, d, p int) []sdk.Geometry {
	return []sdk.Geometry{{Layout: "bf16", BytesPerToken: 2 * d, BytesPerPage: 2 * d * p}}
}

// slowAttach answers Attach late, and hangAttach never: Attach gets
// longer than other calls (it compiles kernels), but not for ever.
type slowAttach struct {
	kvpb.PluginServer
	delay time.Duration
}

func (s slowAttach) Attach(ctx context.Context, req *kvpb.AttachRequest) (*kvpb.AttachResponse, error) {
	if s.delay < 0 {
		select {}
	}
	time.Sleep(s.delay)
	return s.PluginServer.Attach(ctx, req)
}

// garbage answers Attach with no geometry for the pools it was given: an
// inconsistent count the harness must call a protocol fault.
type garbage struct{ kvpb.PluginServer }

func (g garbage) Attach(ctx context.Context, req *kvpb.AttachRequest) (*kvpb.AttachResponse, error) {
	resp, err := g.PluginServer.Attach(ctx, req)
	if err == nil {
		resp.Geometry = nil
	}
	return resp, err
}

// deviceFault answers every StoreBatch the way the SDK answers one whose
// stream wait failed (an illegal address on the GPU), so CI without a GPU
// checks that the harness calls it a crash and restarts the plugin.
type deviceFault struct{ kvpb.StoreServer }

func (deviceFault) StoreBatch(context.Context, *kvpb.StoreBatchRequest) (*kvpb.StoreBatchResponse, error) {
	return nil, status.Error(codes.DataLoss, "store kernel faulted on the device: CUDA_ERROR_ILLEGAL_ADDRESS")
}

// replacing registers a plugin's services with one of them, named by its
// full name, wrapped: the variant's misbehaving answers in front of the
// SDK's.
func replacing(services protocol.Services, service string, wrap func(impl any) any) protocol.Services {
	return func(r grpc.ServiceRegistrar) { services(wrapper{r, service, wrap}) }
}

type wrapper struct {
	grpc.ServiceRegistrar
	service string
	wrap    func(impl any) any
}

func (w wrapper) RegisterService(d *grpc.ServiceDesc, impl any) {
	if d.ServiceName == w.service {
		impl = w.wrap(impl)
	}
	w.ServiceRegistrar.RegisterService(d, impl)
}

// serve is sdk.Serve with a handshake and services of the variant's choosing.
func serve(hs goplugin.HandshakeConfig, services protocol.Services) {
	goplugin.Serve(&goplugin.ServeConfig{HandshakeConfig: hs, Plugins: protocol.Plugins(services),
		GRPCServer: goplugin.DefaultGRPCServer,
		Logger:     hclog.New(&hclog.LoggerOptions{Output: os.Stderr, Level: hclog.Warn})})
}

// Main serves the plugin, misbehaving as KVHARNESS_VARIANT says.
func Main() {
	noteInherited()
	p := sdk.Plugin{Name: "faulty", Version: "1.0.0", Doc: "misbehaves on purpose, one way per variant",
		Variants: variants, Geometry: geometry, Kernel: kernel{}, Kinds: []sdk.Kind{store.Kind}}
	switch os.Getenv("KVHARNESS_VARIANT") {
	case "bad-handshake":
		fmt.Println("this is not a go-plugin handshake")
		time.Sleep(time.Minute)
	case "wrong-version":
		hs := protocol.Handshake
		hs.ProtocolVersion = 99
		serve(hs, sdk.Services(p))
	case "garbage-response":
		serve(protocol.Handshake, replacing(sdk.Services(p), kvpb.Plugin_ServiceDesc.ServiceName,
			func(impl any) any { return garbage{impl.(kvpb.PluginServer)} }))
	case "slow-attach", "hang-attach":
		delay := time.Second
		if os.Getenv("KVHARNESS_VARIANT") == "hang-attach" {
			delay = -1
		}
		serve(protocol.Handshake, replacing(sdk.Services(p), kvpb.Plugin_ServiceDesc.ServiceName,
			func(impl any) any { return slowAttach{impl.(kvpb.PluginServer), delay} }))
	case "device-fault":
		serve(protocol.Handshake, replacing(sdk.Services(p), kvpb.Store_ServiceDesc.ServiceName,
			func(impl any) any { return deviceFault{impl.(kvpb.StoreServer)} }))
	case "slow-start":
		time.Sleep(time.Minute)
		sdk.Serve(p)
	default:
		sdk.Serve(p)
	}
}
