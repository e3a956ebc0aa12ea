package plugin

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"
	goplugin "github.com/hashicorp/go-plugin"
	"github.com/hashicorp/go-plugin/runner"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/kvharness/kvharness/harness/protocol"
	"github.com/kvharness/kvharness/harness/protocol/fdpass"
	"github.com/kvharness/kvharness/harness/protocol/kvpb"
	"github.com/kvharness/kvharness/harness/rundir"
)

// Defaults for Options.
const (
	DefaultCallTimeout  = 10 * time.Second
	DefaultStartTimeout = 20 * time.Second
	// AttachTimeoutFactor stretches Attach's deadline: a plugin compiles
	// its kernels there (NVRTC, Triton), which on a machine busy with
	// other jobs' compiles takes many times a store's worst case.
	AttachTimeoutFactor = 6
)

// Options configure a plugin process.
type Options struct {
	Dir          *rundir.Dir   // sockets go here; required
	CallTimeout  time.Duration // per-call deadline; DefaultCallTimeout if 0
	StartTimeout time.Duration // handshake deadline; DefaultStartTimeout if 0
	Args         []string      // extra command-line arguments
	Env          []string      // extra environment, KEY=VALUE
	// Variant is also passed as KVHARNESS_VARIANT, for plugins whose
	// variant acts before the first RPC.
	Variant string
	// SHA256 pins the plugin binary: a different file is refused.
	SHA256 []byte
	// NoMTLS turns off go-plugin's automatic mutual TLS on the channel,
	// for plugins (in other languages) that cannot negotiate it.
	NoMTLS bool
	// Sanitizer runs every process of the plugin under compute-sanitizer
	// (check --sanitize); nil runs it as it is.
	Sanitizer *Sanitizer
	// SpareEnv is extra environment for spare processes only (KeepSpare):
	// on a GPU, protocol.WarmGPUEnv, so that a spare makes its CUDA
	// context while it waits.
	SpareEnv []string
}

// stopGrace is how long a plugin asked to exit gets before it is killed.
const stopGrace = 2 * time.Second

// Plugin is a running plugin process.
type Plugin struct {
	Name   string
	Path   string // the command line, for messages
	spec   Spec
	opts   Options
	client *goplugin.Client
	runner *groupRunner
	conn   grpc.ClientConnInterface // the plugin's one connection: every service's client is made from it
	base   kvpb.PluginClient        // the base service's client
	stderr *tail
	san    *sanLog // the sanitizer's log of this process, when sanitized
	// services registers an in-process plugin's services again (Spawn).
	services protocol.Services
	// connected: the handshake completed, so the process can be asked to
	// exit (go-plugin's controller) before it is killed.
	connected bool

	owner any // what the plugin is attached to now (see Attach)
	// fdArenas: the plugin's Describe declared cuda_fd_arenas;
	// sparseArenas, cuda_sparse_arenas.
	fdArenas, sparseArenas bool
	// image is the pinned binary being run (see openImage); nil when the
	// binary is not pinned or the plugin runs in process.
	image *os.File
	// described keeps this process's Describe answers by request: every
	// target of a run describes the plugin for its layout, and the answer
	// cannot change while the process lives.
	described map[Query]*Description
	runMu     sync.Mutex // guards runner while go-plugin starts the process (abandonStart)
	spare     *spare     // the process the next Restart adopts (KeepSpare)
	keepSpare bool       // KeepSpare was called: every Restart starts the next spare
}

// Start launches the plugin binary at path and completes the handshake.
func Start(ctx context.Context, name, path string, opts Options) (*Plugin, error) {
	s := Spec{Name: name, Argv: []string{path}}
	if len(opts.SHA256) > 0 {
		s.Pins = map[string][]byte{path: opts.SHA256}
		opts.SHA256 = nil
	}
	return start(ctx, s, opts)
}

func start(ctx context.Context, s Spec, opts Options) (*Plugin, error) {
	if opts.CallTimeout == 0 {
		opts.CallTimeout = DefaultCallTimeout
	}
	if opts.StartTimeout == 0 {
		opts.StartTimeout = DefaultStartTimeout
		if opts.Sanitizer != nil {
			opts.StartTimeout = SanitizerStartTimeout
		}
	}
	p := &Plugin{Name: s.Name, Path: strings.Join(s.Argv, " "), spec: s, opts: opts}
	if err := p.launch(ctx); err != nil {
		return nil, err
	}
	return p, nil
}

// launch starts a fresh process for p and connects to it.
func (p *Plugin) launch(ctx context.Context) error {
	p.stderr = newTail(16 << 10)
	p.owner, p.described, p.connected = nil, nil, false
	p.runMu.Lock()
	p.runner = nil // the last process's, if any: abandonStart must not kill its group id again
	p.runMu.Unlock()
	cmd, err := p.command()
	if err != nil {
		return err
	}
	if s := p.opts.Sanitizer; s != nil {
		p.san = &sanLog{tool: s.Tool, path: s.logPath(p.Name)}
		if cmd, err = p.underSanitizer(cmd, s); err != nil {
			return err
		}
	}
	p.client = goplugin.NewClient(&goplugin.ClientConfig{
		HandshakeConfig:  protocol.Handshake,
		Plugins:          protocol.Plugins(nil),
		AllowedProtocols: []goplugin.Protocol{goplugin.ProtocolGRPC},
		RunnerFunc: func(_ hclog.Logger, spec *exec.Cmd, _ string) (runner.Runner, error) {
			cmd.Env = append(append(spec.Env, "KVHARNESS_VARIANT="+p.opts.Variant), p.opts.Env...)
			r := newGroupRunner(cmd, p.opts.Dir)
			r.stderrDone = p.stderr.closed
			r.dropSanitizer = p.opts.Sanitizer != nil
			p.runMu.Lock()
			p.runner = r
			p.runMu.Unlock()
			return r, nil
		},
		AutoMTLS:         !p.opts.NoMTLS,
		UnixSocketConfig: &goplugin.UnixSocketConfig{TempDir: p.opts.Dir.Path},
		StartTimeout:     p.opts.StartTimeout,
		Stderr:           p.stderr,
		Logger:           hclog.New(&hclog.LoggerOptions{Output: io.Discard, Level: hclog.Off}),
		GRPCDialOptions: []grpc.DialOption{grpc.WithDefaultCallOptions(
			grpc.MaxCallRecvMsgSize(protocol.MaxMessageBytes), grpc.MaxCallSendMsgSize(protocol.MaxMessageBytes))},
	})
	if err := p.connect(ctx); err != nil {
		p.Close()
		return err
	}
	return nil
}

// command is the process to start: the spec's command line, every pinned
// file checked; a pinned executable runs from the image its check made.
func (p *Plugin) command() (*exec.Cmd, error) {
	exe := p.spec.Argv[0]
	for file, sum := range p.spec.Pins {
		if file == exe {
			continue
		}
		if err := verifyFile(file, sum); err != nil { // a script: its interpreter reads it by path
			return nil, err
		}
	}
	cmd := exec.Command(exe, append(p.spec.Argv[1:], p.opts.Args...)...)
	cmd.Dir = p.spec.Dir
	if sum, ok := p.spec.Pins[exe]; ok {
		img, err := openImage(exe, sum)
		if err != nil {
			return nil, err
		}
		if isScript(img) {
			img.Close() // checked; run by path like any interpreted plugin
		} else {
			p.image = img
			cmd.Path = imagePath(img) // argv[0] stays the file's name, for the plugin's own messages
		}
	}
	return cmd, nil
}

// Restart kills the plugin's process group, if it still runs, and starts a
// new process in its place, its pinned files checked again. Targets
// attached to the old process attach again on their next call.
func (p *Plugin) Restart(ctx context.Context) error {
	if p.client == nil {
		return nil // in process: nothing to restart
	}
	if p.opts.Sanitizer != nil {
		p.dropSpare() // started unsanitized, or not at all
		p.Close()     // the sanitizer writes its record at exit: let it
		return p.launch(ctx)
	}
	p.retire()
	if q := p.takeSpare(); q != nil {
		p.adopt(q)
	} else if err := p.launch(ctx); err != nil {
		return err
	}
	p.startSpare(ctx)
	return nil
}

// retire kills the process at once and leaves its reaping to the
// background. A restart wants a fresh process, not the old one's graceful
// exit: on a GPU that exit is a context's teardown, about half a second
// on an H200, which a failure's check in a fresh process used to wait
// out. A killed process runs none of its code again, so it cannot answer
// a call (or a doorbell) meant for the fresh one.
func (p *Plugin) retire() {
	p.described = nil
	if p.runner != nil {
		p.runner.Kill(context.Background())
	}
	p.connected = false
	client, image, runner := p.client, p.image, p.runner
	p.image = nil // launch pins the binary again; client stays until launch replaces it
	go func() {
		client.Kill() // waits for the exit go-plugin watches
		if image != nil {
			image.Close()
		}
		if runner != nil {
			runner.killOrphans()
		}
	}()
}

// Sanitize restarts the plugin under a sanitizer: this process and every
// later one (Restart) run under it.
func (p *Plugin) Sanitize(ctx context.Context, s *Sanitizer) error {
	if p.client == nil {
		return fmt.Errorf("plugin %s runs in this process: it cannot run under compute-sanitizer", p.Name)
	}
	p.opts.Sanitizer = s
	return p.Restart(ctx)
}

// Restartable reports whether Restart starts a fresh process: false for a
// plugin linked into this process (InProcess), which keeps its state.
func (p *Plugin) Restartable() bool { return p.client != nil }

func (p *Plugin) connect(ctx context.Context) error {
	done := make(chan error, 1)
	go func() {
		rpc, err := p.client.Client()
		if err == nil {
			var raw any
			raw, err = rpc.Dispense(protocol.PluginName)
			p.conn, _ = raw.(grpc.ClientConnInterface)
			p.base = kvpb.NewPluginClient(p.conn)
		}
		done <- err
	}()
	select {
	case err := <-done:
		if err != nil {
			return p.startFault(err)
		}
		p.connected = true
		return nil
	case <-ctx.Done():
		p.abandonStart(done)
		p.Close()
		return p.startFault(ctx.Err())
	}
}

// abandonStart ends a start that ctx cut short: go-plugin is still
// starting the process, and writing p's fields as it goes, until the
// process is gone; so it is killed (as soon as there is one) and go-plugin
// is waited for before anything of p is touched.
func (p *Plugin) abandonStart(done <-chan error) {
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for {
		p.runMu.Lock()
		r := p.runner
		p.runMu.Unlock()
		if r != nil {
			r.killStarted()
		}
		select {
		case <-done:
			return
		case <-tick.C:
		}
	}
}

func (p *Plugin) startFault(err error) error {
	f := &Fault{Kind: Handshake, Plugin: p.Name, Call: "start", Err: err,
		Detail: firstLine(err.Error()), Stderr: p.stderr.Lines(12)}
	if p.runner != nil {
		// go-plugin kills the process on a failed start; only an exit of
		// the plugin's own says something.
		if d := p.waitExit(200 * time.Millisecond); d != "" && !strings.HasSuffix(d, "signal killed") {
			f.Detail += " (" + d + ")"
		}
	}
	if strings.Contains(strings.ToLower(err.Error()), "incompatible api version") {
		f.Detail += fmt.Sprintf("; this harness speaks protocol version %d: rebuild the plugin against it", protocol.Version)
	}
	return f
}

func firstLine(s string) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i]
	}
	return s
}

// waitExit waits up to d for the process to exit and describes how it did.
func (p *Plugin) waitExit(d time.Duration) string {
	if p.runner == nil {
		return "" // in process: nothing to wait for
	}
	select {
	case <-p.runner.exited:
	case <-time.After(d):
	}
	return p.runner.exitDetail()
}

// Close stops the plugin's process: it asks it to exit (so that a
// sanitizer around it writes its summary) and, after a grace period,
// kills its process group (what the plugin started dies with it); then
// it waits for go-plugin to finish and keeps what a sanitizer reported.
func (p *Plugin) Close() {
	p.described = nil // a closed plugin answers nothing, from memory neither
	p.dropSpare()
	p.stop()
	if p.client != nil {
		p.client.Kill()
	}
	if p.runner != nil {
		p.runner.killOrphans() // what left the process group, adopted by this subreaper as the process died
	}
	if p.san != nil {
		p.opts.Sanitizer.adopt(p, p.san.read(true))
		p.san = nil
	}
	if p.image != nil {
		p.image.Close()
		p.image = nil
	}
}

// stop asks a connected, running process to exit (go-plugin's controller
// Shutdown) and waits for it up to the grace period, then kills the
// process group.
func (p *Plugin) stop() {
	if p.runner == nil {
		return
	}
	if p.connected && p.runner.exitDetail() == "" {
		grace := stopGrace
		if p.opts.Sanitizer != nil {
			grace = SanitizerGrace
		}
		go func() { // the request blocks until the plugin answers or dies
			if rpc, err := p.client.Client(); err == nil {
				rpc.Close()
			}
		}()
		select {
		case <-p.runner.exited:
		case <-time.After(grace):
		}
	}
	p.connected = false
	p.runner.Kill(context.Background())
}

// Sanitized reports whether the plugin's processes run under a sanitizer,
// whose findings are read after each call.
func (p *Plugin) Sanitized() bool { return p.opts.Sanitizer != nil }

// SanitizerFindings returns what the sanitizer reported about the
// process running now since the last call: the case that just ran.
func (p *Plugin) SanitizerFindings() []Finding {
	if p.san == nil {
		return nil
	}
	return p.san.read(false)
}

// ExitedFindings returns, and removes from the sanitizer's orphans, what
// it reported as this plugin's earlier processes exited: a crashed
// process's last records, which belong to the case it crashed on.
func (p *Plugin) ExitedFindings() []Finding {
	if p.opts.Sanitizer == nil {
		return nil
	}
	return p.opts.Sanitizer.claim(p)
}

// Call runs one RPC of the plugin under the per-call deadline and
// classifies its failure: a crash, a hang, an answer the plugin gave on
// purpose, or a protocol fault (Fault). name is the call, for reports. A
// kind calls its own service with it, its client made from Conn:
//
//	plugin.Call(ctx, p, "Read", kvpb.NewReadClient(p.Conn()).Read, req)
func Call[Req, Resp any](ctx context.Context, p *Plugin, name string, rpc func(context.Context, Req, ...grpc.CallOption) (Resp, error), req Req, opts ...grpc.CallOption) (Resp, error) {
	return callWithin(ctx, p, name, p.opts.CallTimeout, rpc, req, opts...)
}

// callWithin is Call under deadline d.
func callWithin[Req, Resp any](ctx context.Context, p *Plugin, name string, d time.Duration, rpc func(context.Context, Req, ...grpc.CallOption) (Resp, error), req Req, opts ...grpc.CallOption) (Resp, error) {
	if err := p.diedIdle(name); err != nil {
		var zero Resp
		return zero, err
	}
	ctx, cancel := context.WithTimeout(ctx, d)
	defer cancel()
	resp, err := rpc(ctx, req, opts...)
	if err != nil {
		return resp, p.classify(ctx, name, d, err)
	}
	return resp, nil
}

// diedIdle is the fault of a process that died while no call ran: found
// before the next call, never passed over by a silent restart.
func (p *Plugin) diedIdle(name string) error {
	if p.runner == nil {
		return nil
	}
	d := p.runner.exitDetail()
	if d == "" {
		return nil
	}
	f := &Fault{Kind: Crash, Plugin: p.Name, Call: name, Between: true, Stderr: p.stderr.Lines(12)}
	if p.runner.killedByHarness() {
		f.Detail = "the harness stopped the process after an earlier fault, and it was not started again"
		return f
	}
	f.Panic = p.lastWords()
	f.Detail = d + " between calls, before " + name + " (no call was running: something outside the plugin's calls ended it)"
	return f
}

// classify turns an RPC error into a Fault. The order matters: a process
// that died is a crash whatever gRPC said about the broken connection.
func (p *Plugin) classify(ctx context.Context, name string, d time.Duration, err error) error {
	st, _ := status.FromError(err)
	if errors.Is(ctx.Err(), context.Canceled) {
		return ctx.Err() // the run was stopped: not the plugin's fault, and no time to wait for its exit
	}
	f := &Fault{Plugin: p.Name, Call: name, Err: err, Code: st.Code()}
	wait := 50 * time.Millisecond
	if st.Code() == codes.Unavailable || st.Code() == codes.Canceled {
		wait = 2 * time.Second // the connection broke: the process is probably dying
	}
	switch exit := p.waitExit(wait); {
	case exit != "":
		f.Kind, f.Detail, f.Panic = Crash, exit, p.lastWords()
	case errors.Is(ctx.Err(), context.DeadlineExceeded) && st.Code() == codes.DeadlineExceeded:
		f.Kind, f.Detail = Hang, fmt.Sprintf("no answer within %v; killed it (raise --timeout if the kernel is just slow)", d)
		p.Close()
	case errors.Is(ctx.Err(), context.Canceled):
		return ctx.Err()
	case st.Code() == codes.DataLoss: // the SDK's word for a device fault
		f.Kind, f.Detail = Crash, st.Message()
		p.Close() // its CUDA context is gone; the next call must not reuse it
	case refusal(st.Code()):
		f.Kind, f.Detail = Refused, st.Message()
	default:
		f.Kind, f.Detail = Protocol, fmt.Sprintf("%v: %s", st.Code(), st.Message())
	}
	f.Stderr = p.stderr.Lines(12)
	return f
}

// lastWords is the crash report of a plugin whose process has exited,
// once its stderr is read to the end (go-plugin reads it on its own
// goroutine, which may lag the exit by a little).
func (p *Plugin) lastWords() *Panic {
	select {
	case <-p.stderr.eof:
	case <-time.After(time.Second):
	}
	return p.stderr.Crash()
}

// refusal codes are answers a working plugin gives on purpose.
func refusal(c codes.Code) bool {
	switch c {
	case codes.InvalidArgument, codes.FailedPrecondition, codes.Unimplemented, codes.Aborted, codes.OutOfRange:
		return true
	}
	return false
}

// MapsFDArenas says whether the plugin's last Describe declared that it
// maps CUDA arenas shared by file descriptor; false before any Describe.
func (p *Plugin) MapsFDArenas() bool { return p.fdArenas }

// MapsSparseArenas says whether the plugin's last Describe declared that
// it maps sparse CUDA arenas (Arena.pieces); false before any Describe.
func (p *Plugin) MapsSparseArenas() bool { return p.sparseArenas }

// Attach gives the plugin the arena on behalf of owner. A plugin holds one
// attachment at a time; AttachedTo tells a caller whether it must attach
// again before its next call.
func (p *Plugin) Attach(ctx context.Context, owner any, req *kvpb.AttachRequest) (*kvpb.AttachResponse, error) {
	p.owner = nil
	p.Grant(req)
	d := AttachTimeoutFactor * p.opts.CallTimeout
	resp, err := callWithin(ctx, p, "Attach", d, p.base.Attach, req)
	if f, ok := AsFault(err); ok && f.Kind == Hang {
		f.Detail = fmt.Sprintf("no answer within %v (%d× --timeout: Attach compiles kernels); killed it (raise --timeout if the plugin's setup is just slow)", d, AttachTimeoutFactor)
	}
	if err == nil {
		p.owner = owner
	}
	if err == nil && len(resp.Geometry) != len(req.Pools) {
		err = &Fault{Kind: Protocol, Plugin: p.Name, Call: "Attach",
			Detail: fmt.Sprintf("answered %d geometries for %d pools", len(resp.Geometry), len(req.Pools))}
	}
	return resp, err
}

// Grant lets this plugin's process, alone, receive the descriptors of the
// arenas req gives it (package fdpass): until an arena is granted, no
// plugin receives it. Attach grants its request; a call that attaches
// otherwise (AsyncAttach) is granted by its caller first.
func (p *Plugin) Grant(req *kvpb.AttachRequest) {
	if p.runner == nil {
		return // in process: it is the harness
	}
	p.runner.mu.Lock()
	pgid := p.runner.pid
	p.runner.mu.Unlock()
	for _, a := range append([]*kvpb.Arena{req.Arena}, req.Regions...) {
		fdpass.Grant(a.GetPath(), pgid)
		fdpass.Grant(a.GetFdSocket(), pgid)
	}
}

// AttachedTo reports whether the plugin's attachment is owner's.
func (p *Plugin) AttachedTo(owner any) bool { return p.owner == owner }

// Detach releases the arena.
func (p *Plugin) Detach(ctx context.Context) error {
	p.owner = nil
	_, err := Call(ctx, p, "Detach", p.base.Detach, &kvpb.DetachRequest{})
	return err
}

// Bench times a kernel inside the plugin. Its deadline is the per-call
// deadline: callers size their requests to stay well inside it.
func (p *Plugin) Bench(ctx context.Context, req *kvpb.BenchRequest) (*kvpb.BenchResponse, error) {
	resp, err := Call(ctx, p, "Bench", p.base.Bench, req)
	if err == nil && len(resp.Ns) == 0 {
		err = &Fault{Kind: Protocol, Plugin: p.Name, Call: "Bench", Detail: "answered no samples"}
	}
	return resp, err
}

// Conn is the plugin's connection: each kind makes the client of its own
// service from it (kvpb.NewStoreClient(p.Conn())) and calls it through
// Call. It changes when the plugin restarts: take it for each call.
func (p *Plugin) Conn() grpc.ClientConnInterface { return p.conn }

// Spawn starts another process of the same plugin, with the same options
// and trust: a kind that plays two servers (pdasync's prefill and decode)
// runs the second in it. The caller closes it. An in-process plugin
// registers its services again on a connection of their own.
func (p *Plugin) Spawn(ctx context.Context) (*Plugin, error) {
	if p.services != nil {
		return InProcessOf(p.Name, p.services), nil
	}
	if p.client == nil {
		return nil, fmt.Errorf("plugin %s runs in process: it cannot be started again; start a second in-process server instead", p.Name)
	}
	return start(ctx, p.spec, p.opts)
}

// Base is the file name of the plugin, for messages.
func (p *Plugin) Base() string { return filepath.Base(p.Path) }
