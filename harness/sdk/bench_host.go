package sdk

import (
	"context"
	"time"

	"github.com/kvharness/kvharness/harness/protocol/kvpb"
)

// hostBuffers are the CPU bench's scratch memory, kept between Bench calls
// so that a nightly run of many benches does not churn the heap.
type hostBuffers struct {
	flush, src, dst []byte
}

// grow returns b resized to n bytes, reallocating only to grow.
func grow(b []byte, n int) []byte {
	if cap(b) < n {
		return make([]byte, n)
	}
	return b[:n]
}

// emptyLaunch is the CPU's launch-overhead reference: a call that does
// nothing, made through a variable so the compiler cannot remove it.
var emptyLaunch = func() error { return nil }

// benchHost times on the monotonic clock: the CPU kernel, copy() or an
// empty call.
func (s *Server) benchHost(ctx context.Context, req *kvpb.BenchRequest) (*kvpb.BenchResponse, error) {
	launch, err := s.hostLaunch(ctx, req)
	if err != nil {
		return nil, err
	}
	var t0 time.Time
	ops := benchOps{
		launch: launch,
		flush:  s.hostFlush(req),
		start:  func() error { t0 = time.Now(); return nil },
		stop:   func() (time.Duration, error) { return time.Since(t0), nil },
		settle: func() error { return nil },
	}
	ns, _, err := measure(ctx, req, ops) // nothing is held on the host: no sample is host paced
	if err != nil {
		return nil, benchError(err)
	}
	return &kvpb.BenchResponse{Ns: ns, Clock: "monotonic", Device: "cpu"}, nil
}

// hostLaunch picks what one timed launch does.
func (s *Server) hostLaunch(ctx context.Context, req *kvpb.BenchRequest) (func() error, error) {
	switch {
	case req.Empty:
		return emptyLaunch, nil
	case req.Copy:
		n, err := s.copyBytes(req)
		if err != nil {
			return nil, err
		}
		b := &s.bench
		r := rotations(req)
		b.src, b.dst = grow(b.src, r*n), grow(b.dst, r*n)
		var launches []func() error
		for i := range r {
			src, dst := b.src[i*n:(i+1)*n], b.dst[i*n:(i+1)*n]
			launches = append(launches, func() error { copy(dst, src); return nil })
		}
		return s.rotation(req, launches), nil
	}
	if s.bencher == nil {
		return nil, noStore(s.p.Name, "host")
	}
	launches, err := s.bencher.HostLaunches(ctx, benchStores(req))
	if err != nil {
		return nil, err
	}
	return s.rotation(req, launches), nil
}

// hostFlush writes flush_bytes (default DefaultHostFlushBytes) of scratch
// memory, evicting the kernel's data from the CPU caches. clear is a
// vectorised memset: every line is written, which is all eviction needs.
func (s *Server) hostFlush(req *kvpb.BenchRequest) func(int) error {
	n := flushBytes(req, DefaultHostFlushBytes)
	return func(int) error {
		s.bench.flush = grow(s.bench.flush, n)
		clear(s.bench.flush)
		return nil
	}
}
