package sdk

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"syscall"

	"github.com/kvharness/kvharness/harness/cuda"
	"github.com/kvharness/kvharness/harness/protocol/fdpass"
	"github.com/kvharness/kvharness/harness/protocol/kvpb"
)

// validStride separates the pools' valid-count words, so that no two pools
// share a cache line the kernels of the other one read.
const validStride = 256

// DeviceArena is a CUDA arena attached in this process: the harness's
// allocation imported from its file descriptor (shared) or opened through
// its IPC handle, one stream every kernel of this attach runs on, one
// device int32 per pool holding the valid count, the CUDA graphs captured
// so far, and the buffers benches use. The kinds' device paths queue their
// kernels on it.
type DeviceArena struct {
	gpu    *gpu
	stream *cuda.Stream
	base   cuda.Ptr     // arena offset 0
	shared *cuda.Shared // the import, when shared by file descriptor
	size   int
	valid  cuda.Ptr // pool i's count at valid + i·validStride
	graphs graphCache
	bench  benchBuffers
	hold   holder // batched benches' hold, sized from the last one
}

// openDeviceArena maps the arena exported by the harness and creates the
// per-attach state, in one trip to the device's thread. On error nothing
// is left open.
func openDeviceArena(ctx context.Context, g *gpu, desc *kvpb.Arena, pools int) (*DeviceArena, error) {
	var fds []int
	if desc.FdSocket != "" {
		var err error
		if fds, err = fdpass.ReceiveMany(ctx, desc.FdSocket); err != nil {
			return nil, err
		}
		defer func() {
			for _, fd := range fds {
				syscall.Close(fd)
			}
		}()
	}
	var a *DeviceArena
	err := g.dev.Do(func(*cuda.Ctx) error {
		a = &DeviceArena{gpu: g, size: int(desc.Size)}
		if err := a.open(desc, fds); err != nil {
			return err
		}
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

// importShared maps a descriptor-shared arena: whole, or, when the
// harness sends pieces, as the sparse reservation they describe (only
// their windows backed).
func (a *DeviceArena) importShared(desc *kvpb.Arena, fds []int) (*cuda.Shared, error) {
	if len(desc.Pieces) == 0 {
		if len(fds) != 1 {
			return nil, BadRequest("cuda arena without pieces: the fd socket sent %d descriptors, want 1", len(fds))
		}
		return a.gpu.dev.ImportShared(fds[0], int(desc.MappedSize))
	}
	if len(fds) != len(desc.Pieces) {
		return nil, BadRequest("cuda arena of %d pieces: the fd socket sent %d descriptors, want one per piece", len(desc.Pieces), len(fds))
	}
	pieces := make([]cuda.Piece, len(desc.Pieces))
	for i, w := range desc.Pieces {
		if w.Offset > desc.MappedSize || w.Size > desc.MappedSize-w.Offset {
			return nil, BadRequest("arena piece %d [%d,+%d) outside the %d-byte reservation", i, w.Offset, w.Size, desc.MappedSize)
		}
		pieces[i] = cuda.Piece{Off: int(w.Offset), Len: int(w.Size)}
	}
	return a.gpu.dev.ImportSparse(fds, int(desc.MappedSize), pieces)
}

// open maps the arena: from fds when the harness shares it so, else from
// the IPC handle.
func (a *DeviceArena) open(desc *kvpb.Arena, fds []int) error {
	if len(fds) > 0 {
		s, err := a.importShared(desc, fds)
		if err != nil {
			return err
		}
		a.shared, a.base = s, s.Ptr()
		return nil
	}
	var err error
	a.base, err = a.gpu.dev.IpcOpen([64]byte(desc.IpcHandle))
	return err
}

func (a *DeviceArena) init(pools int) error {
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

// GPU is the device the arena lives on.
func (a *DeviceArena) GPU() *cuda.Device { return a.gpu.dev }

// Stream is the attach's stream: every kernel of a call is queued on it.
func (a *DeviceArena) Stream() *cuda.Stream { return a.stream }

// Base is the device address of arena offset 0.
func (a *DeviceArena) Base() cuda.Ptr { return a.base }

// Size is the arena's size in bytes.
func (a *DeviceArena) Size() int { return a.size }

// Do runs f on the device's thread (cuda.Device.Do): a kind queues a
// call's work and waits for it in one trip.
func (a *DeviceArena) Do(f func(*cuda.Ctx) error) error { return a.gpu.dev.Do(f) }

// ValidPtr is the device address of pool i's valid count.
func (a *DeviceArena) ValidPtr(pool int) cuda.Ptr { return a.valid.Add(validStride * pool) }

// SetValid writes n into pool i's count, in stream order: kernels and
// graph replays queued after it read n. The 4-byte source is pageable Go
// memory: the driver has staged it when the call returns.
func (a *DeviceArena) SetValid(c *cuda.Ctx, pool, n int) error {
	var b [4]byte
	binary.LittleEndian.PutUint32(b[:], uint32(n))
	if err := c.HtoDAsync(a.stream, a.ValidPtr(pool), b[:]); err != nil {
		return fmt.Errorf("write valid count %d of pool %d: %w", n, pool, err)
	}
	return nil
}

// Sync waits, inside a Do, for everything queued on the stream; a kernel
// fault shows here.
func (a *DeviceArena) Sync(c *cuda.Ctx) error {
	if err := c.StreamSync(a.stream); err != nil {
		return fmt.Errorf("wait for the store kernels (a fault leaves the CUDA context unusable: restart the plugin): %w", err)
	}
	return nil
}

// Settle waits for the arena's stream after a kernel queued its work and
// returned qerr: a failed wait is a device fault, else qerr is the
// kernel's failure. It waits even after a failed call, so no write is
// still in flight when the harness reads the arena.
func (a *DeviceArena) Settle(kind string, qerr error) error {
	if err := a.stream.Sync(); err != nil {
		return DeviceFault(kind, errors.Join(qerr, err))
	}
	if qerr != nil {
		return KernelFailed(kind, qerr)
	}
	return nil
}

// close waits for queued work, then releases the graphs, the buffers, the
// stream and the mapping, so the harness may free its allocation.
func (a *DeviceArena) close() error {
	return a.gpu.dev.Do(func(*cuda.Ctx) error { return a.release() })
}

func (a *DeviceArena) release() error {
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
	switch {
	case a.shared != nil:
		errs = append(errs, a.shared.Free())
		a.shared, a.base = nil, 0
	case a.base != 0:
		errs = append(errs, a.gpu.dev.IpcClose(a.base))
		a.base = 0
	}
	return errors.Join(errs...)
}
