package cudapool

import (
	"errors"
	"fmt"
	"sync"

	"github.com/kvharness/kvharness/harness/cuda"
	"github.com/kvharness/kvharness/harness/pool"
	"github.com/kvharness/kvharness/harness/protocol/kvpb"
)

// Memory is an arena in the device memory of one GPU. Its methods order
// themselves after earlier work on the legacy default stream only: a caller
// that wrote the arena on a stream of its own must synchronise it first.
// Fill and Reset wait for the device before returning, so another process
// (the plugin) sees their result.
type Memory struct {
	dev    *cuda.Device
	base   cuda.Ptr
	size   int
	handle [64]byte
	k      *kernels

	mu      sync.Mutex // guards the baseline and the scan buffers
	bl      baseline
	scratch scanBuffers
	want    [blockBytes]byte // a block's baseline, for diffBlock
}

var _ pool.Memory = (*Memory)(nil)

// New allocates a zeroed arena of size bytes on dev and exports it for IPC.
func New(dev *cuda.Device, size int) (*Memory, error) {
	if size <= 0 || size > pool.MaxArenaBytes {
		return nil, fmt.Errorf("cuda arena of %d bytes: want 1 to %d", size, pool.MaxArenaBytes)
	}
	k, err := loadKernels(dev)
	if err != nil {
		return nil, fmt.Errorf("cuda arena kernels: %w", err)
	}
	m := &Memory{dev: dev, size: size, k: k}
	if err := m.allocate(); err != nil {
		m.Close()
		return nil, err
	}
	return m, nil
}

// allocate gets the arena, rounded up to whole 256-byte blocks so kernels may
// read every block a window touches, zeroes it like a fresh shared-memory
// file, and exports it.
func (m *Memory) allocate() error {
	rounded := (m.size + blockBytes - 1) / blockBytes * blockBytes
	var err error
	if m.base, err = m.dev.Alloc(rounded); err != nil {
		return fmt.Errorf("cuda arena: %w", err)
	}
	if err := m.dev.Memset8(m.base, 0, rounded); err != nil {
		return fmt.Errorf("zero cuda arena: %w", err)
	}
	if m.handle, err = m.dev.IpcHandle(m.base); err != nil {
		return fmt.Errorf("export cuda arena: %w", err)
	}
	return m.scratch.init(m.dev)
}

// Desc implements pool.Memory: the plugin opens IpcHandle on Device.
func (m *Memory) Desc() *kvpb.Arena {
	return &kvpb.Arena{
		Backend:   kvpb.Backend_BACKEND_CUDA,
		IpcHandle: append([]byte(nil), m.handle[:]...),
		Device:    int32(m.dev.Ordinal()),
		Size:      uint64(m.size),
	}
}

// Ptr is the arena's base device address, for kernels in this process.
func (m *Memory) Ptr() cuda.Ptr { return m.base }

// Size is the arena's size in bytes.
func (m *Memory) Size() int { return m.size }

// check has pool.SHM's bounds rule and message.
func (m *Memory) check(off, n int) error {
	if off < 0 || n < 0 || off+n > m.size {
		return fmt.Errorf("arena range [%d,%d) outside [0,%d)", off, off+n, m.size)
	}
	return nil
}

// ReadAt implements pool.Memory.
func (m *Memory) ReadAt(p []byte, off int) error {
	if err := m.check(off, len(p)); err != nil {
		return err
	}
	return m.dev.DtoH(p, m.base.Add(off))
}

// WriteAt implements pool.Memory.
func (m *Memory) WriteAt(p []byte, off int) error {
	if err := m.check(off, len(p)); err != nil {
		return err
	}
	return m.dev.HtoD(m.base.Add(off), p)
}

// Batch runs f, whose calls on m (and on its device) then take one trip to
// the device thread together instead of one each. Every method takes the
// device thread before m's lock, so a Batch and other callers of m never
// wait for each other in opposite orders.
func (m *Memory) Batch(f func() error) error {
	return m.dev.Do(func(*cuda.Ctx) error { return f() })
}

// Close frees the arena and the scan buffers and unloads the kernels. Any
// importer must have closed its IPC mapping first.
func (m *Memory) Close() error {
	errs := []error{m.scratch.free(m.dev)}
	if m.base != 0 {
		errs = append(errs, m.dev.Free(m.base))
		m.base = 0
	}
	if m.k != nil {
		errs = append(errs, m.k.mod.Unload())
		m.k = nil
	}
	return errors.Join(errs...)
}
