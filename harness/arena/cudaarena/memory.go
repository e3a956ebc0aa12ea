package cudaarena

import (
	"cmp"
	"errors"
	"fmt"
	"slices"
	"sync"

	"github.com/kvharness/kvharness/harness/arena/internal/baseline"
	"github.com/kvharness/kvharness/harness/cuda"
	"github.com/kvharness/kvharness/harness/pool"
	"github.com/kvharness/kvharness/harness/protocol"
	"github.com/kvharness/kvharness/harness/protocol/fdpass"
)

// Sharing is how a plugin maps the arena.
type Sharing int

const (
	// IPC allocates with cuMemAlloc and exports a CUDA IPC handle: every
	// plugin SDK opens it, but the plugin's mapping may translate through
	// smaller pages (scattered stores measured up to 1.5x slower on an H200).
	IPC Sharing = iota
	// FD allocates with the virtual memory API and hands the plugin a file
	// descriptor over a Unix socket; both processes map it 2 MiB aligned.
	FD
)

func (s Sharing) String() string {
	if s == FD {
		return "fd"
	}
	return "ipc"
}

// Memory is an arena in the device memory of one GPU. It drives the GPU
// from a device thread and a stream of its own, so that the arenas of
// several targets (check --jobs) neither queue behind one thread nor wait
// for each other's kernels. Its methods order themselves after earlier work
// on that stream only: a caller that wrote the arena on another stream must
// synchronise it first. WriteAt, Fill and Reset wait for their work before
// returning, so another process (the plugin) sees their result.
type Memory struct {
	dev    *cuda.Device // the arena's own thread on the device's primary context
	stream *cuda.Stream
	base   cuda.Ptr
	size   int
	how    Sharing
	dir    string         // FD: where the socket's directory goes
	handle [64]byte       // IPC
	shared *cuda.Shared   // FD
	fds    *fdpass.Server // FD
	k      *kernels

	// backed, when set, are the only windows of the arena with memory
	// behind them (NewSparse): every operation keeps to them.
	backed []pool.Window

	mu      sync.Mutex // guards the baseline and the scan buffers
	bl      baseline.Spans
	scratch scanBuffers
	want    [blockBytes]byte // a block's baseline, for diffBlock
}

// New allocates a zeroed arena of size bytes on dev and exports it as how
// says. An FD arena's socket lives in a directory under dir (the run
// directory, which the next run sweeps if this one is killed; "" for the
// system's temporary directory).
func New(dev *cuda.Device, size int, how Sharing, dir string) (*Memory, error) {
	if size <= 0 || size > pool.MaxArenaBytes {
		return nil, fmt.Errorf("cuda arena of %d bytes: want 1 to %d", size, pool.MaxArenaBytes)
	}
	own, err := dev.Thread()
	if err != nil {
		return nil, fmt.Errorf("cuda arena device thread: %w", err)
	}
	m := &Memory{dev: own, size: size, how: how, dir: dir}
	if err := m.open(); err != nil {
		m.Close()
		return nil, err
	}
	return m, nil
}

// NewSparse is New for an arena shared by file descriptor whose memory
// backs only the windows backed (rounded out to the allocation
// granularity): pools past 4 GiB of offsets cost the windows their cases
// touch. Fill, Reset and the scans keep to those windows; ReadAt and
// WriteAt refuse anything else; a plugin's access elsewhere faults.
func NewSparse(dev *cuda.Device, size int, backed []pool.Window, dir string) (*Memory, error) {
	if size <= 0 || size > pool.MaxArenaBytes || len(backed) == 0 {
		return nil, fmt.Errorf("sparse cuda arena of %d bytes, %d windows: want 1 to %d bytes and windows", size, len(backed), pool.MaxArenaBytes)
	}
	own, err := dev.Thread()
	if err != nil {
		return nil, fmt.Errorf("cuda arena device thread: %w", err)
	}
	m := &Memory{dev: own, size: size, how: FD, dir: dir, backed: backed}
	if err := m.open(); err != nil {
		m.Close()
		return nil, err
	}
	return m, nil
}

// open makes the arena's stream, loads its kernels and allocates it.
func (m *Memory) open() error {
	var err error
	if m.stream, err = m.dev.NewStream(); err != nil {
		return fmt.Errorf("cuda arena stream: %w", err)
	}
	if m.k, err = loadKernels(m.dev, m.stream); err != nil {
		return fmt.Errorf("cuda arena kernels: %w", err)
	}
	return m.allocate()
}

// allocate gets the arena, rounded up to whole 256-byte blocks so kernels may
// read every block a window touches, zeroes it like a fresh shared-memory
// file, and exports it.
func (m *Memory) allocate() error {
	rounded := (m.size + blockBytes - 1) / blockBytes * blockBytes
	if m.how == FD {
		return m.allocateShared(rounded)
	}
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

// allocateShared is allocate for FD: the allocation's granularity rounds
// it up further, and a socket hands out its descriptor.
func (m *Memory) allocateShared(rounded int) error {
	var err error
	if m.backed != nil {
		err = m.allocateSparse(rounded)
	} else {
		m.shared, err = m.dev.AllocShared(rounded)
	}
	if err != nil {
		return fmt.Errorf("cuda arena: %w (set %s=ipc to share it by IPC handle instead)", err, SharingEnv)
	}
	m.base = m.shared.Ptr()
	for _, w := range m.backedOr() {
		if err := m.dev.Memset8(m.base.Add(w.Off), 0, w.Len); err != nil {
			return fmt.Errorf("zero cuda arena: %w", err)
		}
	}
	if m.fds, err = fdpass.ServeMany(m.dir, m.shared.ExportFDs); err != nil {
		return fmt.Errorf("export cuda arena: %w", err)
	}
	return m.scratch.init(m.dev)
}

// allocateSparse reserves the arena and backs its windows, which become
// the windows the driver rounded them to.
func (m *Memory) allocateSparse(rounded int) error {
	want := make([]cuda.Piece, len(m.backed))
	for i, w := range m.backed {
		want[i] = cuda.Piece{Off: w.Off, Len: w.Len}
	}
	var err error
	if m.shared, err = m.dev.AllocSparse(rounded, want); err != nil {
		return err
	}
	m.backed = m.backed[:0]
	for _, p := range m.shared.Pieces() {
		m.backed = append(m.backed, pool.Window{Off: p.Off, Len: p.Len})
	}
	return nil
}

// backedOr is the backed windows: all of the mapping for a dense arena.
func (m *Memory) backedOr() []pool.Window {
	if m.backed != nil {
		return m.backed
	}
	return []pool.Window{{Off: 0, Len: m.shared.Size()}}
}

// clip is the parts of w with memory behind them: w itself in a dense
// arena.
func (m *Memory) clip(w pool.Window) []pool.Window {
	if m.backed == nil {
		return []pool.Window{w}
	}
	return pool.Intersect(m.backed, w)
}

// clipAll is clip over windows, in order: each window's first backed
// window found by binary search (a case's spans number in the tens of
// thousands, the backed windows in the hundreds), in any order of ws.
func (m *Memory) clipAll(ws []pool.Window) []pool.Window {
	if m.backed == nil {
		return ws
	}
	out := make([]pool.Window, 0, len(ws))
	for _, w := range ws {
		j, _ := slices.BinarySearchFunc(m.backed, w.Off, func(b pool.Window, off int) int { return cmp.Compare(b.End(), off+1) })
		for _, b := range m.backed[j:] {
			if b.Off >= w.End() {
				break
			}
			if lo, hi := max(b.Off, w.Off), min(b.End(), w.End()); lo < hi {
				out = append(out, pool.Window{Off: lo, Len: hi - lo})
			}
		}
	}
	return out
}

// SharingEnv set to "ipc" makes the harness share every CUDA arena by IPC
// handle, even with plugins that map one by file descriptor.
const SharingEnv = "KVHARNESS_CUDA_SHARING"

// Desc implements arena.Memory: the plugin opens IPCHandle, or receives a
// descriptor from FDSocket, on Device.
func (m *Memory) Desc() protocol.ArenaDesc {
	a := protocol.ArenaDesc{Backend: protocol.BackendCUDA, Device: m.dev.Ordinal(), Size: m.size}
	if m.how == FD {
		a.FDSocket, a.MappedSize = m.fds.Path, m.shared.Span()
		for _, w := range m.backed {
			a.Pieces = append(a.Pieces, protocol.Piece{Off: w.Off, Len: w.Len})
		}
	} else {
		a.IPCHandle = append([]byte(nil), m.handle[:]...)
	}
	return a
}

// Sharing is how the plugin maps the arena.
func (m *Memory) Sharing() Sharing { return m.how }

// Ptr is the arena's base device address, for kernels in this process.
func (m *Memory) Ptr() cuda.Ptr { return m.base }

// Size is the arena's size in bytes.
func (m *Memory) Size() int { return m.size }

// checkBacked is check, and in a sparse arena that the range has memory
// behind it.
func (m *Memory) checkBacked(off, n int) error {
	if err := m.check(off, n); err != nil || m.backed == nil || n == 0 {
		return err
	}
	for _, b := range m.backed {
		if off >= b.Off && off+n <= b.End() {
			return nil
		}
	}
	return fmt.Errorf("arena range [%d,%d) is not backed in this sparse arena (its pools are checked in windows)", off, off+n)
}

// check has pool.SHM's bounds rule and message.
func (m *Memory) check(off, n int) error {
	if off < 0 || n < 0 || off+n > m.size {
		return fmt.Errorf("arena range [%d,%d) outside [0,%d)", off, off+n, m.size)
	}
	return nil
}

// ReadAt implements pool.Memory.
func (m *Memory) ReadAt(p []byte, off int) error {
	if err := m.checkBacked(off, len(p)); err != nil {
		return err
	}
	return m.toHost(p, m.base.Add(off))
}

// WriteAt implements pool.Memory.
func (m *Memory) WriteAt(p []byte, off int) error {
	if err := m.checkBacked(off, len(p)); err != nil {
		return err
	}
	return m.dev.Do(func(*cuda.Ctx) error {
		if err := m.toDevice(m.base.Add(off), p); err != nil {
			return err
		}
		return m.sync("write")
	})
}

// toDevice queues a copy of p to dst on the arena's stream: the driver
// has staged p when it returns, so p may be reused, and the arena's later
// kernels see the bytes.
func (m *Memory) toDevice(dst cuda.Ptr, p []byte) error { return m.stream.HtoDAsync(dst, p) }

// toHost copies from src into p after the arena's queued work; into Go
// (pageable) memory the copy is complete when it returns.
func (m *Memory) toHost(p []byte, src cuda.Ptr) error { return m.stream.DtoHAsync(p, src) }

// Trips counts the functions handed to the arena's device thread, the
// cost that batching (Batch, one trip per scan) keeps down.
func (m *Memory) Trips() uint64 { return m.dev.Trips() }

// Batch runs f, whose calls on m (and on its device) then take one trip to
// the device thread together instead of one each. Every method takes the
// device thread before m's lock, so a Batch and other callers of m never
// wait for each other in opposite orders.
func (m *Memory) Batch(f func() error) error {
	return m.dev.Do(func(*cuda.Ctx) error { return f() })
}

// Close frees the arena and the scan buffers and unloads the kernels. An
// IPC importer must have closed its mapping first; memory shared by
// descriptor lives on until every importer has released it.
func (m *Memory) Close() error {
	if m.stream != nil {
		m.sync("close") // the frees below must not pull memory from under queued kernels
	}
	errs := []error{m.scratch.free(m.dev), m.fds.Close()}
	m.fds = nil
	switch {
	case m.shared != nil:
		errs = append(errs, m.shared.Free())
		m.shared, m.base = nil, 0
	case m.base != 0:
		errs = append(errs, m.dev.Free(m.base))
		m.base = 0
	}
	if m.k != nil {
		errs = append(errs, m.k.mod.Unload())
		m.k = nil
	}
	if m.stream != nil {
		errs = append(errs, m.stream.Destroy())
		m.stream = nil
	}
	errs = append(errs, m.dev.Close())
	return errors.Join(errs...)
}
