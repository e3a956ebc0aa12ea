package gpuread

import (
	"fmt"

	"github.com/kvharness/kvharness/harness/cuda"
	"github.com/kvharness/kvharness/harness/sdk/read"
	"github.com/kvharness/kvharness/plugins/internal/fncache"
)

// Kernels caches a plugin's compiled read kernels per device and spec for
// the life of the process.
type Kernels struct {
	fns fncache.Cache
}

// Function returns the compiled kernel of s on dev, compiling it on first
// use.
func (k *Kernels) Function(dev *cuda.Device, s Spec) (*cuda.Function, error) {
	opts, err := s.Options()
	if err != nil {
		return nil, fmt.Errorf("%s: %w", s.Name, err)
	}
	return k.fns.Function(dev, s.Name, s.Program(), Entry, opts)
}

// Read queues the read of c with the kernel of s on c.Stream: one block of
// Warps warps per request.
func (k *Kernels) Read(c *read.DeviceCall, s Spec) error {
	if c.Requests == 0 || c.K == 0 {
		return nil // nothing to score, nothing to write
	}
	if err := check(c); err != nil {
		return err
	}
	n, err := Buffer(c.K, c.TokenCount, s.HeadDim)
	if err != nil {
		return err
	}
	f, err := k.Function(c.Device, s)
	if err != nil {
		return err
	}
	return f.Launch(c.Stream, cuda.Dim3{X: uint32(c.Requests)}, cuda.Dim3{X: 32 * Warps}, 8*n,
		c.PoolBase(), c.Queries, c.Indptr, c.Tokens, c.OutSlots, c.OutScores,
		int32(c.Requests), int32(c.K), int32(n))
}

// check refuses what the kernel cannot address: slots past 32 bits, and
// misaligned pools or windows.
func check(c *read.DeviceCall) error {
	if c.Pool.Slots > MaxSlots {
		return fmt.Errorf("pool %q has %d slots; the CUDA read kernel handles at most %d", c.Pool.Name, c.Pool.Slots, MaxSlots)
	}
	if c.Requests > 1<<31-1 || c.K > 1<<31-1 {
		return fmt.Errorf("%s: requests and k must fit in 32 bits", c)
	}
	for _, a := range []struct {
		what  string
		p     cuda.Ptr
		align uint64
	}{{"pool base", c.PoolBase(), 16}, {"queries", c.Queries, 2}, {"indptr", c.Indptr, 8}, {"tokens", c.Tokens, 8},
		{"out slots", c.OutSlots, 8}, {"out scores", c.OutScores, 4}} {
		if uint64(a.p)%a.align != 0 {
			return fmt.Errorf("%s at %#x is not %d-byte aligned", a.what, uint64(a.p), a.align)
		}
	}
	return nil
}
