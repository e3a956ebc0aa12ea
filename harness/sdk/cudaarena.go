package sdk

import (
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/kvharness/kvharness/harness/cuda"
)

// validStride separates the pools' valid-count words, so that no two pools
// share a cache line the kernels of the other one read.
const validStride = 256

// deviceArena is a CUDA arena attached in this process: the harness's
// allocation opened through its IPC handle, one stream every kernel of
// this attach runs on, one device int32 per pool holding the valid count,
// the CUDA graphs captured so far, and the buffers benches use.
type deviceArena struct {
	gpu    *gpu
	stream *cuda.Stream
	base   cuda.Ptr // arena offset 0
	size   int
	valid  cuda.Ptr // pool i's count at valid + i·validStride
	graphs graphCache
	bench  benchBuffers
	hold   holder // batched benches' hold, sized from the last one
}

// openDeviceArena maps the arena exported by the harness and creates the
// per-attach state, in one trip to the device's thread. On error nothing
// is left open.
func openDeviceArena(g *gpu, handle [64]byte, size, pools int) (*deviceArena, error) {
	var a *deviceArena
	err := g.dev.Do(func(*cuda.Ctx) error {
		base, err := g.dev.IpcOpen(handle)
		if err != nil {
			return err
		}
		a = &deviceArena{gpu: g, base: base, size: size}
		if err := a.init(pools); err != nil {
			return errors.Join(err, a.close())
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return a, nil
}

func (a *deviceArena) init(pools int) error {
	var err error
	if a.stream, err = a.gpu.dev.NewStream(); err != nil {
		return fmt.Errorf("create the plugin's CUDA stream: %w", err)
	}
	n := validStride * max(pools, 1)
	if a.valid, err = a.gpu.dev.Alloc(n); err != nil {
		return fmt.Errorf("valid-count buffers: %w", err)
	}
	return a.gpu.dev.Memset8(a.valid, 0, n)
}

// validPtr is the device address of pool i's valid count.
func (a *deviceArena) validPtr(pool int) cuda.Ptr { return a.valid.Add(validStride * pool) }

// setValidIn writes n into pool i's count, in stream order: kernels and
// graph replays queued after it read n. The 4-byte source is pageable Go
// memory: the driver has staged it when the call returns.
func (a *deviceArena) setValidIn(c *cuda.Ctx, pool, n int) error {
	var b [4]byte
	binary.LittleEndian.PutUint32(b[:], uint32(n))
	if err := c.HtoDAsync(a.stream, a.validPtr(pool), b[:]); err != nil {
		return fmt.Errorf("write valid count %d of pool %d: %w", n, pool, err)
	}
	return nil
}

// syncIn waits, inside a Do, for everything queued on the stream; a
// kernel fault shows here.
func (a *deviceArena) syncIn(c *cuda.Ctx) error {
	if err := c.StreamSync(a.stream); err != nil {
		return fmt.Errorf("wait for the store kernels (a fault leaves the CUDA context unusable: restart the plugin): %w", err)
	}
	return nil
}

// close waits for queued work, then releases the graphs, the buffers, the
// stream and the IPC mapping, so the harness may free its allocation.
func (a *deviceArena) close() error {
	return a.gpu.dev.Do(func(*cuda.Ctx) error { return a.release() })
}

func (a *deviceArena) release() error {
	var errs []error
	if a.stream != nil {
		errs = append(errs, a.stream.Sync())
	}
	errs = append(errs, a.graphs.destroy(), a.bench.free(a.gpu.dev))
	if a.valid != 0 {
		errs = append(errs, a.gpu.dev.Free(a.valid))
		a.valid = 0
	}
	if a.stream != nil {
		errs = append(errs, a.stream.Destroy())
		a.stream = nil
	}
	if a.base != 0 {
		errs = append(errs, a.gpu.dev.IpcClose(a.base))
		a.base = 0
	}
	return errors.Join(errs...)
}
