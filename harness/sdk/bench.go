package sdk

import (
	"context"
	"errors"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/kvharness/kvharness/harness/cuda"
	"github.com/kvharness/kvharness/harness/protocol/kvpb"
)

// DefaultBenchBatch is the launches per timing in batched mode when the
// request leaves batch at 0: enough to hide a small kernel's launch gaps
// behind the queue.
const DefaultBenchBatch = 64

// Default bytes written between timed launches in cold mode: several times
// the last-level cache (the H200's L2 is 60 MiB; a server CPU's L3 is
// tens of MiB).
const (
	DefaultDeviceFlushBytes = 256 << 20
	DefaultHostFlushBytes   = 64 << 20
)

// A Bencher makes the launches Bench times for a kind's calls: the
// store's, which BenchRequest.store and its rotation name. The store kind
// registers it (Server.Benches); a plugin without one benches copies and
// empty launches only.
type Bencher interface {
	// HostLaunches checks stores against a shared-memory attach and
	// returns one launch of each.
	HostLaunches(ctx context.Context, stores []*kvpb.StoreRequest) ([]func() error, error)
	// DeviceLaunches, inside c's Do, checks stores against a CUDA attach,
	// writes each pool's valid count once (it does not change during a
	// bench) and returns what queues one launch, or graph replay, of each.
	DeviceLaunches(ctx context.Context, c *cuda.Ctx, stores []*kvpb.StoreRequest) ([]func() error, error)
}

// Benches makes b what Bench launches for stores.
func (s *Server) Benches(b Bencher) { s.bencher = b }

// noStore refuses a store bench on a plugin with no store kernel for the
// attached memory.
func noStore(name, memory string) error {
	if memory == "CUDA" {
		return status.Errorf(codes.Unimplemented, "%s has no CUDA store kernel: store with the shm backend (--backend cpu)", name)
	}
	return status.Errorf(codes.Unimplemented, "%s has no store kernel for host memory", name)
}

// benchOps is one backend's side of a bench: what is timed and how.
type benchOps struct {
	launch func() error                  // queue (GPU) or run (CPU) one timed launch
	flush  func(i int) error             // cold mode: evict caches, outside the timed region
	start  func() error                  // open the timed region
	stop   func() (time.Duration, error) // close it and wait for the work in it
	settle func() error                  // wait for the warmup launches
}

// Bench times a kernel, the copy roofline or an empty launch inside the
// plugin, with no RPC in the timed loop.
func (s *Server) Bench(ctx context.Context, req *kvpb.BenchRequest) (*kvpb.BenchResponse, error) {
	if err := checkBenchCounts(req); err != nil {
		return nil, err
	}
	if req.GetStore() == nil && !req.Copy && !req.Empty {
		return nil, BadRequest("bench: no kernel; send a store request, or set copy or empty")
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.attached() {
		return nil, status.Error(codes.FailedPrecondition, "bench before attach")
	}
	if err := s.sameLayouts(req); err != nil {
		return nil, err
	}
	if s.dev != nil {
		return s.benchDevice(ctx, req)
	}
	return s.benchHost(ctx, req)
}

// Bounds on a bench request's counts: far above what a harness asks for,
// low enough that a typo is an error rather than a plugin that allocates
// gigabytes of samples or runs for hours.
const (
	maxBenchIterations = 100_000
	maxBenchWarmup     = 1_000_000
	maxBenchBatch      = 100_000
)

// checkBenchCounts rejects counts out of bounds, and cold caches with
// batched timing: a batch flushes once, so all but its first launch would
// run on hot caches under a "cold" label.
func checkBenchCounts(req *kvpb.BenchRequest) error {
	switch {
	case req.Iterations == 0:
		return BadRequest("bench: iterations is 0; ask for at least one measurement")
	case req.Iterations > maxBenchIterations:
		return BadRequest("bench: %d iterations; at most %d per call (call again for more)", req.Iterations, maxBenchIterations)
	case req.Warmup > maxBenchWarmup:
		return BadRequest("bench: %d warmup launches; at most %d", req.Warmup, maxBenchWarmup)
	case req.Batch > maxBenchBatch:
		return BadRequest("bench: batch of %d launches; at most %d", req.Batch, maxBenchBatch)
	case req.Cold && perTiming(req) > 1:
		return BadRequest("bench: cold caches with a batch of %d: a batch flushes once, so its later launches run hot; time cold launches per launch", perTiming(req))
	}
	return checkRotation(req)
}

// perTiming is how many launches one measurement covers.
func perTiming(req *kvpb.BenchRequest) int {
	if req.Mode != kvpb.BenchMode_BENCH_BATCHED {
		return 1
	}
	if req.Batch == 0 {
		return DefaultBenchBatch
	}
	return int(req.Batch)
}

// measure runs the warmup launches, then the timed measurements. A
// measurement below the clock's resolution is reported as 1 ns, so every
// sample is positive.
func measure(ctx context.Context, req *kvpb.BenchRequest, ops benchOps) (ns []float64, hostPaced int, err error) {
	for i := range req.Warmup {
		if i%1024 == 0 && ctx.Err() != nil {
			return nil, 0, ctx.Err()
		}
		if err := ops.launch(); err != nil {
			return nil, 0, err
		}
	}
	if err := ops.settle(); err != nil {
		return nil, 0, err
	}
	per := perTiming(req)
	ns = make([]float64, 0, req.Iterations)
	for i, retakes := 0, 0; i < int(req.Iterations); i++ {
		if err := ctx.Err(); err != nil {
			return nil, 0, err
		}
		d, err := measureOnce(req, ops, i, per)
		if errors.Is(err, errRetake) && retakes < maxRetakes {
			retakes++
			i--
			continue
		}
		if errors.Is(err, errRetake) {
			hostPaced++
		} else if err != nil {
			return nil, 0, err
		}
		ns = append(ns, float64(max(d, 1)))
	}
	return ns, hostPaced, nil
}

// errRetake marks a measurement that is not what it claims to be (a
// batch whose hold ended before it was queued); measure takes it again, up
// to maxRetakes times per bench, then keeps what it gets and counts it.
var errRetake = errors.New("measurement to retake")

const maxRetakes = 16

func measureOnce(req *kvpb.BenchRequest, ops benchOps, i, per int) (time.Duration, error) {
	if req.Cold {
		if err := ops.flush(i); err != nil {
			return 0, err
		}
	}
	if err := ops.start(); err != nil {
		return 0, err
	}
	for range per {
		if err := ops.launch(); err != nil {
			return 0, err
		}
	}
	return ops.stop()
}

// benchError turns a failure inside a bench into the RPC's error.
func benchError(err error) error {
	if _, ok := status.FromError(err); ok {
		return err
	}
	return status.Errorf(codes.Aborted, "bench: %v", err)
}

// maxBenchBytes bounds copy_bytes and flush_bytes, so that a typo is an
// error rather than an out-of-memory kill of the plugin.
const maxBenchBytes = 16 << 30

// flushBytes is the cold-mode flush size: flush_bytes, or def.
func flushBytes(req *kvpb.BenchRequest, def int) int {
	if req.FlushBytes == 0 {
		return def
	}
	return int(min(req.FlushBytes, maxBenchBytes))
}

// copyBytes is the size of a copy bench: copy_bytes, or by default the
// store's input rows (capacity × head_dim bf16), the bytes a store of that
// batch has to read. A rotating copy needs that many bytes per buffer
// pair, within the same bound in all.
func (s *Server) copyBytes(req *kvpb.BenchRequest) (int, error) {
	n := req.CopyBytes
	if st := req.GetStore(); n == 0 && st != nil && int(st.Pool) < len(s.pools) {
		n = uint64(st.Capacity) * uint64(s.pools[st.Pool].Layout.HeadDim) * 2
	}
	r := uint64(rotations(req))
	switch {
	case n == 0 || r == 1 && n > maxBenchBytes:
		return 0, BadRequest("copy bench of %d bytes: set copy_bytes between 1 and %d (or send the store whose rows to copy)", n, maxBenchBytes)
	case n > maxBenchBytes/r: // n·r, without overflowing
		return 0, BadRequest("copy bench of %d bytes over %d buffer pairs: more than %d bytes in all; copy fewer bytes or rotate over fewer sets", n, r, maxBenchBytes)
	}
	return int(n), nil
}
