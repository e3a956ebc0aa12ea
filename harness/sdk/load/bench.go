package load

import (
	"context"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	"github.com/kvharness/kvharness/harness/protocol/kvpb"
	"github.com/kvharness/kvharness/harness/sdk"
)

// LoadBench times the plugin's load path against a plain copy of the same
// bytes, each from the host region to device memory, on the host's
// monotonic clock: a load is StartLoad, every layer's gates on the
// consumer stream, and the wait for every stream; the copy is one copy of
// as many bytes from the host region into scratch memory, and the same
// wait. The case's latch, late, fail and reader lists are ignored.
func (s *server) LoadBench(ctx context.Context, req *kvpb.LoadBenchRequest) (*kvpb.LoadBenchResponse, error) {
	s.Lock()
	defer s.Unlock()
	switch {
	case !s.Attached():
		return nil, status.Error(codes.FailedPrecondition, "load bench before attach")
	case req.Load == nil || req.Load.Op != kvpb.LoadOp_LOAD_OP_LOAD:
		return nil, sdk.BadRequest("load bench: want a load case (op LOAD_OP_LOAD)")
	case req.Iterations < 1 || req.Iterations > 100_000 || req.Warmup > 100_000:
		return nil, sdk.BadRequest("load bench: %d iterations and %d warmup: want 1..100000 and at most 100000", req.Iterations, req.Warmup)
	case len(s.Regions()) < 2:
		return nil, sdk.BadRequest("load bench: the attach has no host region to load from")
	}
	bare := proto.Clone(req.Load).(*kvpb.LoadRequest) // a load case (op LOAD), checked above
	bare.Latch, bare.Trace, bare.Late, bare.Fail, bare.Readers, bare.ReaderOffsets = false, false, nil, nil, nil, nil
	in, le, err := s.prepareLoad(ctx, bare)
	if err != nil {
		return nil, err
	}
	resp := &kvpb.LoadBenchResponse{Bytes: uint64(loadBytes(in)), Clock: "monotonic", Device: "cpu"}
	if d := le.x.Device(); d != nil {
		resp.Device = d.Name()
	}
	if int(resp.Bytes) > len(s.Regions()[1]) {
		return nil, sdk.BadRequest("load bench: a load moves %d bytes, more than the host region's %d", resp.Bytes, len(s.Regions()[1]))
	}
	err = le.x.do(func() error {
		var err error
		resp.LoadNs, resp.CopyNs, err = s.benchLoad(ctx, le, in, int(req.Warmup), int(req.Iterations))
		return err
	})
	if err != nil {
		return nil, loadFault(le.x, err)
	}
	return resp, nil
}

// loadBytes is what one load of in moves.
func loadBytes(in *loadInput) int {
	n := 0
	for _, b := range in.buffers {
		n += b.PageBytes
	}
	return n * len(in.pages) * in.layers
}

// benchLoad alternates the two timed paths, warmup first.
func (s *server) benchLoad(ctx context.Context, le *loadExec, in *loadInput, warmup, iters int) (loads, copies []float64, err error) {
	x := le.x
	n := loadBytes(in)
	dst, err := s.benchScratch(le, n)
	if err != nil {
		return nil, nil, err
	}
	k := s.Kernel().(LayerLoader)
	load := func() error {
		call := &Call{Variant: s.Variant(), Exec: x, Layers: in.layers, FirstLayer: in.first, Buffers: in.buffers,
			Pages: in.pages, Prior: le.prior, pages: in.table}
		if err := k.StartLoad(ctx, call); err != nil {
			return err
		}
		for l := range in.layers {
			for _, b := range in.order {
				if err := k.WaitLayer(ctx, call, l, b, le.consumer); err != nil {
					return err
				}
			}
		}
		return nil
	}
	plain := func() error { return le.consumer.Copy(dst, Ref{Mem: 1}, n) }
	for i := range warmup + iters {
		dl, err := timed(x, in, load)
		if err != nil {
			return nil, nil, err
		}
		dc, err := timed(x, in, plain)
		if err != nil {
			return nil, nil, err
		}
		if i >= warmup {
			loads, copies = append(loads, float64(dl.Nanoseconds())), append(copies, float64(dc.Nanoseconds()))
		}
	}
	return loads, copies, nil
}

// timed runs f as one call with no latch and waits for every stream.
func timed(x *Exec, in *loadInput, f func() error) (time.Duration, error) {
	if err := x.beginCall(newSchedule(in), false); err != nil {
		return 0, err
	}
	start := time.Now()
	err := f()
	_, ferr := x.endCall()
	d := time.Since(start)
	if err != nil {
		return 0, err
	}
	return d, ferr
}

// benchScratch is device (CPU: host) memory for the plain copy, kept for
// the attach and grown when a bench needs more.
func (s *server) benchScratch(le *loadExec, n int) (Ref, error) {
	if le.benchBytes >= n {
		return le.bench, nil
	}
	r, err := le.x.Scratch("bench copy", n)
	if err != nil {
		return Ref{}, err
	}
	le.bench, le.benchBytes = r, n
	return r, nil
}
