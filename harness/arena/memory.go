package arena

import (
	"github.com/kvharness/kvharness/harness/arena/cudaarena"
	"github.com/kvharness/kvharness/harness/arena/shm"
	"github.com/kvharness/kvharness/harness/pool"
	"github.com/kvharness/kvharness/harness/protocol/kvpb"
)

// Memory is one region's storage, as the harness sees it. The host-shared
// and CUDA backends implement it; the oracle needs nothing else.
type Memory interface {
	// Desc tells a plugin how to map the region.
	Desc() *kvpb.Arena
	// ReadAt and WriteAt copy between host memory and the region.
	ReadAt(p []byte, off int) error
	WriteAt(p []byte, off int) error
	// Fill writes the seeded background over w (byte w.Off+k gets
	// Background(seed, k, 1)); it becomes w's baseline. Windows filled with
	// the same seed hold the same bytes wherever they are.
	Fill(w pool.Window, seed uint64) error
	// Changed lists the maximal ranges of w that differ from the baseline.
	Changed(w pool.Window) ([]pool.Window, error)
	// Reset restores the baseline over ws.
	Reset(ws []pool.Window) error
	Close() error
}

// WindowScanner is a Memory that compares chosen windows with the
// baseline without reading the rest: a store case's scan, which covers
// only the slots its rows name, and leaves the proof that nothing else
// changed to a later full scan (see kernels/store's doc).
type WindowScanner interface {
	// ChangedIn lists the maximal changed ranges inside ws, which must be
	// sorted and neither overlap nor touch, with the bytes they hold now,
	// back to back.
	ChangedIn(ws []pool.Window) ([]pool.Window, []byte, error)
}

var (
	_ Memory        = (*shm.Memory)(nil)
	_ Memory        = (*cudaarena.Memory)(nil)
	_ WindowScanner = (*shm.Memory)(nil)
)
