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
// kernel (launched, or replayed from a graph, exactly as the store is).
// The whole bench, warmup, timed loops, flushes and waits, runs in one
// trip to the device's thread (cuda.Device.Do), so no handoff between
// goroutines sits inside a timed region: between two events there are only
// the driver calls that queue the work.
//
// Per-launch mode records an event, queues one launch, records another and
// waits for it: the latency a caller sees, the host's launch call
// included. Batched mode times batch launches queued back to back between
// two events, behind a hold kernel (see holder) unless that is switched
// off. The valid count is written once, before the warmup: it does not
// change during a bench, and a copy between launches would sit inside
// batched timings.
func (s *Server) benchDevice(ctx context.Context, req *kvpb.BenchRequest) (*kvpb.BenchResponse, error) {
	d := s.dev
	var ns []float64
	var hostPaced int
	err := d.gpu.dev.Do(func(c *cuda.Ctx) error {
		launch, err := s.deviceBenchLaunch(ctx, c, req)
		if err != nil {
			return err
		}
		start, end, err := d.bench.events(d.gpu.dev)
		if err != nil {
			return err
		}
		flush, err := d.flushOp(c, req)
		if err != nil {
			return err
		}
		h := d.holder(req)
		calls := perTiming(req) + 2 // the launches and the two event records
		ops := benchOps{
			launch: launch,
			flush:  flush,
			start: func() error {
				if err := h.hold(c, calls); err != nil {
					return err
				}
				return c.Record(start, d.stream)
			},
			stop: func() (time.Duration, error) {
				outrun, err := h.outrun(c, start)
				if err != nil {
					return 0, err
				}
				if err := c.Record(end, d.stream); err != nil {
					return 0, err
				}
				h.queuedAll(calls)
				el, err := c.Elapsed(start, end)
				if err == nil && outrun {
					err = errRetake
				}
				return el, err
			},
			settle: func() error { return d.Sync(c) },
		}
		ns, hostPaced, err = measure(ctx, req, ops)
		if serr := d.Sync(c); err == nil {
			err = serr
		}
		return err
	})
	if err != nil {
		return nil, benchError(err)
	}
	return &kvpb.BenchResponse{Ns: ns, Clock: "cuda-event", Device: d.gpu.dev.Name(), HostPaced: uint32(hostPaced)}, nil
}

// flushOp returns cold mode's cache flush: a memset of flush_bytes (default
// DefaultDeviceFlushBytes, over twice the H200's L2) on the stream, before
// the start event. The buffer is allocated only when cold is asked for.
func (d *DeviceArena) flushOp(c *cuda.Ctx, req *kvpb.BenchRequest) (func(int) error, error) {
	if !req.Cold {
		return func(int) error { return nil }, nil
	}
	n := flushBytes(req, DefaultDeviceFlushBytes)
	p, err := d.bench.flush.ensure(d.gpu.dev, n)
	if err != nil {
		return nil, err
	}
	return func(i int) error { return c.Memset8Async(d.stream, p, byte(i), n) }, nil
}

// deviceBenchLaunch picks what one timed launch queues.
func (s *Server) deviceBenchLaunch(ctx context.Context, c *cuda.Ctx, req *kvpb.BenchRequest) (func() error, error) {
	d := s.dev
	switch {
	case req.Empty:
		return d.emptyLaunch(c, req.GetStore().GetGraph())
	case req.Copy:
		return s.deviceCopy(c, req)
	}
	if s.bencher == nil {
		return nil, noStore(s.p.Name, "CUDA")
	}
	launches, err := s.bencher.DeviceLaunches(ctx, c, benchStores(req))
	if err != nil {
		return nil, err
	}
	return s.rotation(req, launches), nil
}

// deviceCopy is the roofline: cuMemcpyDtoDAsync between two plugin-owned
// buffers of copy_bytes, or between a rotation's pairs in turn.
func (s *Server) deviceCopy(c *cuda.Ctx, req *kvpb.BenchRequest) (func() error, error) {
	d := s.dev
	n, err := s.copyBytes(req)
	if err != nil {
		return nil, err
	}
	r := rotations(req)
	src, err := d.bench.src.ensure(d.gpu.dev, r*n)
	if err != nil {
		return nil, err
	}
	dst, err := d.bench.dst.ensure(d.gpu.dev, r*n)
	if err != nil {
		return nil, err
	}
	var launches []func() error
	for i := range r {
		from, to := src.Add(i*n), dst.Add(i*n)
		launches = append(launches, func() error { return c.DtoDAsync(d.stream, to, from, n) })
	}
	return s.rotation(req, launches), nil
}

// emptyLaunch is the launch-overhead reference: the empty kernel, launched
// or (in graph mode) replayed from a one-node graph, through the same
// calls as a store's launch or replay.
func (d *DeviceArena) emptyLaunch(c *cuda.Ctx, graph bool) (func() error, error) {
	f, err := d.gpu.emptyKernel()
	if err != nil {
		return nil, err
	}
	launch := func() error { return f.Launch(d.stream, cuda.Dim3{X: 1}, cuda.Dim3{X: 1}, 0) }
	if !graph {
		return launch, nil
	}
	x, err := d.graphs.get(emptyGraph{}, d.stream, launch)
	if err != nil {
		return nil, err
	}
	return func() error { return c.GraphLaunch(x, d.stream) }, nil
}
