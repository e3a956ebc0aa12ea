package load

import (
	"context"
	"errors"
	"fmt"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/kvharness/kvharness/harness/cuda"
	"github.com/kvharness/kvharness/harness/protocol/kvpb"
	"github.com/kvharness/kvharness/harness/sdk"
)

// Kind is the load kind: a plugin lists it in sdk.Plugin.Kinds to serve
// its Kernel's LayerLoader, PageStorer or both, on either backend (the
// SDK's streams run the kernel's work on the CPU or the GPU).
var Kind sdk.Kind = kind{}

// Name is the kind's name, its service's (kvharness.v1.Load): what
// Describe lists and a variant of this kind names in Variant.Kernel.
var Name = sdk.NameOf(&kvpb.Load_ServiceDesc)

type kind struct{}

func (kind) Serves(kernel any) (host, device bool) {
	ok := implements[LayerLoader](kernel) || implements[PageStorer](kernel)
	return ok, ok
}

// HoldsStreams: the latch holds late copies' streams (sdk.StreamHolder).
func (kind) HoldsStreams() {}

func (kind) Register(r grpc.ServiceRegistrar, s *sdk.Server) {
	srv := &server{Server: s}
	kvpb.RegisterLoadServer(r, srv)
	s.OnRelease(srv.closeLoad) // it may have pinned the host regions
}

// server answers the load service from the plugin's attachment.
type server struct {
	kvpb.UnimplementedLoadServer
	*sdk.Server
	load *loadExec // the attach's streams, made on the first load call
}

// loadExec is an attach's Exec and the SDK's own streams on it: the
// consumer (the engine's compute stream, where gates wait and probes
// read) and the prior stream (where earlier readers of the destination
// pages still run).
type loadExec struct {
	x               *Exec
	consumer, prior *Stream
	bench           Ref // LoadBench's copy destination
	benchBytes      int
}

// exec returns the attach's Exec, making it (and letting the kernel
// prepare its streams) on the first load call.
func (s *server) exec(ctx context.Context) (*loadExec, error) {
	if s.load != nil {
		return s.load, nil
	}
	var x *Exec
	if s.Device() != nil {
		var err error
		if x, err = newDeviceExec(s.Device(), s.Regions()[1:]); err != nil {
			return nil, status.Errorf(codes.FailedPrecondition, "streams for the load kernel: %v", err)
		}
	} else {
		x = newHostExec(s.Regions())
	}
	le := &loadExec{x: x}
	err := x.do(func() error {
		var err error
		if le.consumer, err = x.NewStream("consumer"); err != nil {
			return err
		}
		if le.prior, err = x.NewStream("prior"); err != nil {
			return err
		}
		if p, ok := s.Kernel().(Preparer); ok {
			if err := p.PrepareLoad(ctx, x); err != nil {
				return fmt.Errorf("prepare the load kernel: %w", err)
			}
		}
		return nil
	})
	if err != nil {
		x.close()
		return nil, status.Error(codes.FailedPrecondition, err.Error())
	}
	s.load = le
	return le, nil
}

// closeLoad frees the attach's Exec, before its memory is unmapped.
func (s *server) closeLoad() error {
	if s.load == nil {
		return nil
	}
	err := s.load.x.close()
	s.load = nil
	return err
}

// Load runs one ordering case: see LoadRequest.
func (s *server) Load(ctx context.Context, req *kvpb.LoadRequest) (*kvpb.LoadResponse, error) {
	s.Lock()
	defer s.Unlock()
	if !s.Attached() {
		return nil, status.Error(codes.FailedPrecondition, "load before attach")
	}
	in, le, err := s.prepareLoad(ctx, req)
	if err != nil {
		return nil, err
	}
	var resp *kvpb.LoadResponse
	err = le.x.do(func() error {
		var err error
		resp, err = s.runCase(ctx, le, in)
		return err
	})
	if err != nil {
		return nil, loadFault(le.x, err)
	}
	return resp, nil
}

// loadFault is a failed call's status: a device fault on the GPU (the
// context is gone), the SDK's refusal otherwise.
func loadFault(x *Exec, err error) error {
	if _, ok := status.FromError(err); ok && status.Code(err) != codes.Unknown {
		return err
	}
	if x.eng.device() != nil {
		return sdk.DeviceFault("load", err)
	}
	return status.Errorf(codes.Aborted, "load: %v", err)
}

// prepareLoad readies a case for Load and LoadBench: it refuses an op the
// kernel lacks, checks the case and finds the Exec it runs on.
func (s *server) prepareLoad(ctx context.Context, req *kvpb.LoadRequest) (*loadInput, *loadExec, error) {
	if err := s.servesOp(req.Op); err != nil {
		return nil, nil, err
	}
	in, err := s.checkLoad(req)
	if err != nil {
		return nil, nil, err
	}
	le, err := s.exec(ctx)
	return in, le, err
}

// servesOp refuses an op the kernel lacks.
func (s *server) servesOp(op kvpb.LoadOp) error {
	load, store := implements[LayerLoader](s.Kernel()), implements[PageStorer](s.Kernel())
	switch {
	case op == kvpb.LoadOp_LOAD_OP_STORE && !store:
		return status.Errorf(codes.Unimplemented, "%s has no page store (its Kernel does not implement load.PageStorer)", s.Name())
	case op != kvpb.LoadOp_LOAD_OP_STORE && !load:
		return status.Errorf(codes.Unimplemented, "%s has no layer loader (its Kernel does not implement load.LayerLoader)", s.Name())
	}
	return nil
}

// runCase runs a checked case on the Exec, inside its backend's thread.
func (s *server) runCase(ctx context.Context, le *loadExec, in *loadInput) (*kvpb.LoadResponse, error) {
	x := le.x
	if err := x.beginCall(newSchedule(in), in.latch); err != nil {
		return nil, err
	}
	resp := &kvpb.LoadResponse{}
	var err error
	if in.op == kvpb.LoadOp_LOAD_OP_STORE {
		err = s.runStore(ctx, le, in, resp)
	} else {
		err = s.runLoad(ctx, le, in, resp)
	}
	deadlock, ferr := x.endCall()
	if err = errors.Join(err, ferr); err != nil {
		return nil, err
	}
	resp.Deadlock = deadlock
	if in.trace {
		resp.Trace = x.m.trace()
	}
	resp.Streams, resp.Events, resp.Counters = x.m.names()
	for _, m := range x.mems {
		resp.Memories = append(resp.Memories, m.name)
	}
	return resp, nil
}

// runLoad: readers hold pages on the prior stream; the plugin starts the
// load; the consumer gates and probes each layer's buffers in order.
func (s *server) runLoad(ctx context.Context, le *loadExec, in *loadInput, resp *kvpb.LoadResponse) error {
	k := s.Kernel().(LayerLoader)
	if err := s.queueReaders(le.x, le.prior, in); err != nil {
		return err
	}
	call := &Call{Variant: s.Variant(), Exec: le.x, Layers: in.layers, FirstLayer: in.first, Buffers: in.buffers,
		Pages: in.pages, Prior: le.prior, pages: in.table}
	startErr := k.StartLoad(ctx, call)
	if startErr != nil {
		startErr = fmt.Errorf("start load: %w", startErr)
	}
	if err := le.x.settle(); err != nil {
		return err
	}
	for l := range in.layers {
		for k2, b := range in.order {
			gerr := startErr
			if gerr == nil {
				gerr = k.WaitLayer(ctx, call, l, b, le.consumer)
			}
			resp.Gates = append(resp.Gates, gate(l, b, gerr))
			if gerr != nil {
				continue
			}
			if err := le.x.settle(); err != nil {
				return err
			}
			if err := s.probe(le, in, l, k2, b); err != nil {
				return err
			}
		}
	}
	return nil
}

// settle waits, in a latched call, until the backend has run everything
// the model has: on the GPU, what is not held has finished before the
// harness queues its next step, as it has on the CPU, so that a probe
// never races a copy the latch does not hold and every run of a case
// sees the same bytes.
func (x *Exec) settle() error {
	x.m.epoch++
	if !x.m.latched {
		return nil
	}
	return x.eng.settle(x)
}

// runStore: readers hold pages on the caller stream; for each layer the
// caller writes the inputs, the plugin stores them, the caller probes.
func (s *server) runStore(ctx context.Context, le *loadExec, in *loadInput, resp *kvpb.LoadResponse) error {
	k := s.Kernel().(PageStorer)
	x, caller := le.x, le.consumer
	if err := s.queueReaders(x, caller, in); err != nil {
		return err
	}
	np, nb := len(in.pages), len(in.buffers)
	for l := range in.layers {
		for b := range nb {
			for i := range np {
				if in.latch && in.inputs[itemKey{l, b, i}] {
					if err := x.hold(caller.id); err != nil {
						return err
					}
				}
				src := in.truths[(l*nb+b)*np+i]
				if err := x.sdkCopy(caller, in.table.src(l, b, i), src, in.buffers[b].PageBytes,
					kvpb.LoadRole_LOAD_ROLE_PRODUCER, item(l, b, i), "input"); err != nil {
					return err
				}
			}
		}
		if err := x.settle(); err != nil {
			return err
		}
		call := &PageStoreCall{Variant: s.Variant(), Exec: x, Layer: l, FirstLayer: in.first, Buffers: in.buffers,
			Pages: in.pages, Caller: caller, pages: in.table}
		serr := k.StorePages(ctx, call)
		if err := x.settle(); err != nil {
			return err
		}
		for k2, b := range in.order {
			resp.Gates = append(resp.Gates, gate(l, b, serr))
			if serr == nil {
				if err := s.probe(le, in, l, k2, b); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

func gate(l, b int, err error) *kvpb.LoadGate {
	g := &kvpb.LoadGate{Layer: uint32(l), Buffer: uint32(b)}
	if err != nil {
		g.Error = err.Error()
		if g.Error == "" {
			g.Error = "failed"
		}
	}
	return g
}

// queueReaders holds the readers' pages: behind the latch, a copy of each
// reader page's destination, in every layer and buffer, on stream s.
func (s *server) queueReaders(x *Exec, st *Stream, in *loadInput) error {
	if len(in.readers) == 0 {
		return nil
	}
	if in.latch {
		if err := x.hold(st.id); err != nil {
			return err
		}
	}
	nb, nr := len(in.buffers), len(in.readers)
	for l := range in.layers {
		for b := range nb {
			for r, i := range in.readers {
				dst := in.readerRefs[(l*nb+b)*nr+r]
				if err := x.sdkCopy(st, dst, in.table.dst(l, b, i), in.buffers[b].PageBytes,
					kvpb.LoadRole_LOAD_ROLE_READER, item(l, b, i), "reader"); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

// probe queues the consumer's read of a layer's buffer: a copy of each
// page into its probe slot.
func (s *server) probe(le *loadExec, in *loadInput, l, k, b int) error {
	np, nb := len(in.pages), len(in.buffers)
	for i := range np {
		dst := in.probes[(l*nb+k)*np+i]
		if err := le.x.sdkCopy(le.consumer, dst, in.table.dst(l, b, i), in.buffers[b].PageBytes,
			kvpb.LoadRole_LOAD_ROLE_PROBE, item(l, b, i), "probe"); err != nil {
			return err
		}
	}
	return nil
}

// sdkCopy queues one of the SDK's own copies (probe, reader, producer):
// the case's late and fail lists do not apply to it.
func (x *Exec) sdkCopy(s *Stream, dst, src Ref, n int, role kvpb.LoadRole, it *kvpb.LoadItem, what string) error {
	o := &op{kind: kvpb.LoadOpKind_LOAD_OP_KIND_COPY, role: role, item: it,
		reads: []Span{{src, n}}, writes: []Span{{dst, n}}}
	if x.sched != nil {
		o.label = what + " " + x.sched.name(it)
	}
	return x.enqueue(s.id, o)
}

// beginCall starts a call: the case's schedule, a fresh log, the latch.
func (x *Exec) beginCall(sc *schedule, latch bool) error {
	x.sched, x.waits = sc, 0
	x.m.begin(latch)
	return x.eng.begin(x, latch)
}

// endCall releases the latch once everything not held has run, forces
// through what can never run (a deadlock, which it describes), and waits
// for every stream.
func (x *Exec) endCall() (string, error) {
	defer func() { x.sched = nil }()
	if x.m.latched {
		if err := x.eng.settle(x); err != nil {
			return "", err
		}
		if err := x.eng.release(x); err != nil {
			return "", err
		}
		x.m.release()
	}
	deadlock := ""
	if stuck := x.m.stuck(); len(stuck) > 0 {
		deadlock = x.m.deadlock(stuck)
		for o, ok := x.m.force(); ok; o, ok = x.m.force() {
			if err := x.eng.force(x, o); err != nil {
				return deadlock, err
			}
			x.m.pump()
		}
		if left := x.m.stuck(); len(left) > 0 {
			return deadlock, fmt.Errorf("stream operations that can never run: %s", x.m.deadlock(left))
		}
	}
	if err := x.eng.finish(x); err != nil {
		return deadlock, err
	}
	return deadlock, x.m.err
}

// do runs f where the Exec's backend calls are cheapest: on the GPU inside
// one trip to the device's thread.
func (x *Exec) do(f func() error) error {
	if d := x.eng.device(); d != nil {
		return d.Do(func(*cuda.Ctx) error { return f() })
	}
	return f()
}

// close frees the Exec's backend objects.
func (x *Exec) close() error {
	return x.do(func() error { return x.eng.close(x) })
}
