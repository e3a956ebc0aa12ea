package sdk

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/kvharness/kvharness/harness/cuda"
	"github.com/kvharness/kvharness/harness/protocol/kvpb"
)

// benchBuffers are the device memory and events of CUDA benches, kept for
// the attach so that repeated benches do not allocate.
type benchBuffers struct {
	flush      devBuffer
	src, dst   devBuffer
	start, end *cuda.Event
}

// devBuffer is a device allocation that only grows.
type devBuffer struct {
	p cuda.Ptr
	n int
}

// ensure makes b at least n bytes, reallocating only to grow.
func (b *devBuffer) ensure(dev *cuda.Device, n int) (cuda.Ptr, error) {
	if b.n >= n {
		return b.p, nil
	}
	if err := b.release(dev); err != nil {
		return 0, err
	}
	p, err := dev.Alloc(n)
	if err != nil {
		return 0, fmt.Errorf("bench buffer of %d bytes: %w", n, err)
	}
	b.p, b.n = p, n
	return p, nil
}

func (b *devBuffer) release(dev *cuda.Device) error {
	if b.p == 0 {
		return nil
	}
	err := dev.Free(b.p)
	b.p, b.n = 0, 0
	return err
}

// events returns the pair of timing events, creating them once.
func (b *benchBuffers) events(dev *cuda.Device) (*cuda.Event, *cuda.Event, error) {
	var err error
	if b.start == nil {
		if b.start, err = dev.NewEvent(); err != nil {
			return nil, nil, err
		}
	}
	if b.end == nil {
		if b.end, err = dev.NewEvent(); err != nil {
			return nil, nil, err
		}
	}
	return b.start, b.end, nil
}

func (b *benchBuffers) free(dev *cuda.Device) error {
	errs := []error{b.flush.release(dev), b.src.release(dev), b.dst.release(dev)}
	for _, e := range []**cuda.Event{&b.start, &b.end} {
		if *e != nil {
			errs = append(errs, (*e).Destroy())
			*e = nil
		}
	}
	return errors.Join(errs...)
}

// benchDevice times on CUDA events recorded on the plugin's stream: the
// store (eager or graph replays), a device-to-device copy, or an empty
// kernel. The valid count is written once, before the warmup: it does not
// change during a bench, and a copy between launches would sit inside
// batched timings. Batched measurements are queued behind a hold kernel
// (see holder), so they time the GPU running the batch back to back.
func (s *server) benchDevice(ctx context.Context, req *kvpb.BenchRequest) (*kvpb.BenchResponse, error) {
	d := s.dev
	launch, err := s.deviceBenchLaunch(ctx, req)
	if err != nil {
		return nil, benchError(err)
	}
	start, end, err := d.bench.events(d.gpu.dev)
	if err != nil {
		return nil, benchError(err)
	}
	flush, err := d.flushOp(req)
	if err != nil {
		return nil, benchError(err)
	}
	// A batch is queued behind a hold: its timing is the GPU's. A single
	// launch is not: per-launch mode is the latency a caller sees, host
	// launch cost included.
	h := newHolder(nil, d.stream)
	calls := perTiming(req) + 2 // the launches and the two event records
	if req.Mode == kvpb.BenchMode_BENCH_BATCHED {
		h.f = d.gpu.holdKernel()
	}
	ops := benchOps{
		launch: launch,
		flush:  flush,
		start: func() error {
			if err := h.hold(calls); err != nil {
				return err
			}
			return start.Record(d.stream)
		},
		stop: func() (time.Duration, error) {
			if err := end.Record(d.stream); err != nil {
				return 0, err
			}
			h.queuedAll(calls)
			return cuda.Elapsed(start, end)
		},
		settle: d.sync,
	}
	ns, err := measure(ctx, req, ops)
	if serr := d.sync(); err == nil {
		err = serr
	}
	if err != nil {
		return nil, benchError(err)
	}
	return &kvpb.BenchResponse{Ns: ns, Clock: "cuda-event", Device: d.gpu.dev.Name()}, nil
}

// flushOp returns cold mode's cache flush: a memset of flush_bytes (default
// DefaultDeviceFlushBytes, over twice the H200's L2) on the stream, before
// the start event. The buffer is allocated only when cold is asked for.
func (d *deviceArena) flushOp(req *kvpb.BenchRequest) (func(int) error, error) {
	if !req.Cold {
		return func(int) error { return nil }, nil
	}
	n := flushBytes(req, DefaultDeviceFlushBytes)
	p, err := d.bench.flush.ensure(d.gpu.dev, n)
	if err != nil {
		return nil, err
	}
	return func(i int) error { return d.stream.Memset8Async(p, byte(i), n) }, nil
}

// deviceBenchLaunch picks what one timed launch queues.
func (s *server) deviceBenchLaunch(ctx context.Context, req *kvpb.BenchRequest) (func() error, error) {
	d := s.dev
	switch {
	case req.Empty:
		return d.emptyLaunch(req.GetStore().GetGraph())
	case req.Copy:
		return s.deviceCopy(req)
	}
	k := s.p.Kernel.(DeviceStorer) // checked at attach
	st := req.GetStore()
	call, err := s.deviceCall(st)
	if err != nil {
		return nil, err
	}
	if err := d.setValid(int(st.Pool), call.N); err != nil {
		return nil, err
	}
	return s.deviceLaunch(ctx, k, st, call)
}

// deviceCopy is the roofline: cuMemcpyDtoDAsync between two plugin-owned
// buffers of copy_bytes.
func (s *server) deviceCopy(req *kvpb.BenchRequest) (func() error, error) {
	d := s.dev
	n, err := s.copyBytes(req)
	if err != nil {
		return nil, err
	}
	src, err := d.bench.src.ensure(d.gpu.dev, n)
	if err != nil {
		return nil, err
	}
	dst, err := d.bench.dst.ensure(d.gpu.dev, n)
	if err != nil {
		return nil, err
	}
	return func() error { return d.stream.DtoDAsync(dst, src, n) }, nil
}

// emptyLaunch is the launch-overhead reference: the empty kernel, launched
// or (in graph mode) replayed from a one-node graph.
func (d *deviceArena) emptyLaunch(graph bool) (func() error, error) {
	f, err := d.gpu.emptyKernel()
	if err != nil {
		return nil, err
	}
	launch := func() error { return f.Launch(d.stream, cuda.Dim3{X: 1}, cuda.Dim3{X: 1}, 0) }
	if !graph {
		return launch, nil
	}
	x, err := d.graphs.get(graphKey{pool: -1}, d.stream, launch)
	if err != nil {
		return nil, err
	}
	return func() error { return x.Launch(d.stream) }, nil
}
