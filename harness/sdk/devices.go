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
