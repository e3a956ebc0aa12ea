package sdk

import (
	"os"
	"time"

	"github.com/kvharness/kvharness/harness/cuda"
	"github.com/kvharness/kvharness/harness/protocol/kvpb"
)

// HoldEnv switches the hold kernel of batched CUDA benches: "0" queues
// batches with nothing in front of them, anything else (the default) behind
// a hold.
const HoldEnv = "KVHARNESS_BENCH_HOLD"

// Hold sizing: twice the host's last seen cost per queued call, plus slack,
// never more than maxHold.
const (
	initialCallCost = 20 * time.Microsecond
	holdSlack       = 20 * time.Microsecond
	maxHold         = 200 * time.Millisecond
)

// holder holds the stream while a batched measurement is queued, so that
// the batch then runs back to back at the GPU's pace rather than the
// host's (what nvbench's blocking kernel does). Inside one Do a launch
// costs the host only the driver call, but on the H200 machine that is
// still about 7 µs for cuLaunchKernel and 3 µs for cuGraphLaunch, while
// an empty kernel runs back to back in 1.4 µs and a 512-row store in 2 to
// 2.3 µs: without the hold, batches of small launches measured 7 to 8 µs
// per launch whatever the kernel (the host's launch rate), with it 1.4 to
// 2.3 µs. Above about 32,768 rows the kernel outlasts the launch call and
// the hold changes nothing. The hold is sized from the host's cost per
// call in the previous measurement of this attach, so it keeps ahead of
// the host as that cost changes.
type holder struct {
	f        *cuda.Function // nil: no hold
	s        *cuda.Stream
	callCost time.Duration
	queued   time.Time
}

// holder returns the attach's holder, set up for req: a hold for batched
// timings (unless HoldEnv is "0" or the kernel did not compile), none for
// per-launch ones, which are the latency a caller sees.
func (d *DeviceArena) holder(req *kvpb.BenchRequest) *holder {
	h := &d.hold
	h.s, h.f = d.stream, nil
	if h.callCost == 0 {
		h.callCost = initialCallCost
	}
	if req.Mode == kvpb.BenchMode_BENCH_BATCHED && os.Getenv(HoldEnv) != "0" {
		h.f = d.gpu.holdKernel()
	}
	return h
}

// hold queues the hold kernel, sized for the given number of driver calls
// to queue behind it, and starts the host's clock on those calls.
func (h *holder) hold(c *cuda.Ctx, calls int) error {
	h.queued = time.Now()
	if h.f == nil {
		return nil
	}
	ns := min(maxHold, 2*h.callCost*time.Duration(calls)+holdSlack)
	return c.Launch(h.f, h.s, cuda.Dim3{X: 1}, cuda.Dim3{X: 1}, 0, uint64(ns))
}

// queuedAll records what the calls cost the host, for the next hold.
func (h *holder) queuedAll(calls int) {
	h.callCost = time.Since(h.queued) / time.Duration(max(calls, 1))
}

// outrun says, once a batch is queued, whether the hold ended before the
// host finished queueing it: start (recorded right behind the hold) is
// already reached. The GPU may then have waited for launches, timing the
// host's pace; the caller retakes the sample, and the next hold, sized
// from the call cost just measured, is longer.
func (h *holder) outrun(c *cuda.Ctx, start *cuda.Event) (bool, error) {
	if h.f == nil {
		return false, nil
	}
	return c.Reached(start)
}
