package sdk

import (
	"fmt"
	"sync"

	"github.com/kvharness/kvharness/harness/cuda"
)

// gpu is one CUDA device as this process uses it. It is opened once and
// never closed: the primary context, the modules compiled into it and the
// IPC mappings all live as long as the plugin process, and re-opening a
// device on every attach would throw away every compiled kernel.
type gpu struct {
	dev *cuda.Device

	emptyOnce sync.Once
	empty     *cuda.Function
	emptyErr  error

	holdOnce sync.Once
	hold     *cuda.Function // nil when it did not compile: batches are then timed without a hold
}

var gpus struct {
	mu   sync.Mutex
	open map[int]*gpu
}

// openGPU returns this process's handle on device ordinal, opening it on
// first use. Without a driver the error wraps cuda.ErrNoDriver.
func openGPU(ordinal int) (*gpu, error) {
	gpus.mu.Lock()
	defer gpus.mu.Unlock()
	if g := gpus.open[ordinal]; g != nil {
		return g, nil
	}
	dev, err := cuda.Open(ordinal)
	if err != nil {
		return nil, err
	}
	if gpus.open == nil {
		gpus.open = make(map[int]*gpu)
	}
	g := &gpu{dev: dev}
	gpus.open[ordinal] = g
	return g, nil
}

// OpenDevice returns this process's handle on device ordinal, opened once
// for the process (a kind that opens regions of its own, as pdasync's
// roles do, opens them in its context). Without a driver the error wraps
// cuda.ErrNoDriver.
func OpenDevice(ordinal int) (*cuda.Device, error) {
	g, err := openGPU(ordinal)
	if err != nil {
		return nil, err
	}
	return g.dev, nil
}

// emptySource is the launch-overhead reference: a kernel that does nothing.
const emptySource = `extern "C" __global__ void kvharness_empty() {}`

// emptyKernel compiles the empty kernel once per device.
func (g *gpu) emptyKernel() (*cuda.Function, error) {
	g.emptyOnce.Do(func() {
		m, err := g.dev.Compile("kvharness_empty", emptySource)
		if err != nil {
			g.emptyErr = fmt.Errorf("empty kernel for launch-overhead benches: %w", err)
			return
		}
		g.empty, g.emptyErr = m.Function("kvharness_empty")
	})
	return g.empty, g.emptyErr
}

// HoldSource is the CUDA C of the hold kernel, HoldEntry(ns): it keeps a
// stream busy for ns nanoseconds of the GPU's global timer, so that the
// host can queue a whole batch behind it and the batch then runs back to
// back, at the GPU's pace rather than the host's (what nvbench's blocking
// kernel does). The loop is bounded, so a timer that never advanced could
// not hang the stream. The SDK's batched timings queue behind it; it is
// exported for timing loops of their own (the tests' event loops) that
// hold a stream the same way.
const HoldSource = `extern "C" __global__ void kvharness_hold(unsigned long long ns) {
  unsigned long long t0, t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t0));
  for (unsigned i = 0; i < (1u << 24); i++) {
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
    if (t - t0 >= ns) return;
    __nanosleep(200);
  }
}`

// HoldEntry is the hold kernel's name in HoldSource.
const HoldEntry = "kvharness_hold"

// holdKernel compiles the hold kernel once per device; nil if it cannot be
// had, in which case batched timings include the host's launch gaps.
func (g *gpu) holdKernel() *cuda.Function {
	g.holdOnce.Do(func() {
		if m, err := g.dev.Compile(HoldEntry, HoldSource); err == nil {
			g.hold, _ = m.Function(HoldEntry)
		}
	})
	return g.hold
}
