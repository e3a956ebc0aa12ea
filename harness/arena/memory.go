package arena

import (
	"github.com/kvharness/kvharness/harness/arena/cudaarena"
	"github.com/kvharness/kvharness/harness/arena/shm"
	"github.com/kvharness/kvharness/harness/pool"
	"github.com/kvharness/kvharness/harness/protocol"
)

// Memory is one region's storage, as the harness sees it. The host-shared
// and CUDA backends implement it; the oracle needs nothing else.
type Memory interface {
	// Desc tells a plugin how to map the region.
	Desc() protocol.ArenaDesc
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

// Lazy is a Memory whose windows can be filled lazily: their pages stay
// holes of a sparse file, which only a write allocates, until the
// harness materializes the ones a case names. A pool of a million slots
// then costs what its cases touch, and a stray write anywhere in it is
// still seen (shm's lazy.go tells how).
type Lazy interface {
	// Sparse reports whether FillLazy leaves holes (else it is Fill).
	Sparse() bool
	// FillLazy is Fill, with w's whole pages left as holes.
	FillLazy(w pool.Window, seed uint64) error
	// Materialize writes the baseline into the holes ws touch.
	Materialize(ws []pool.Window) error
	// Strays lists the pages of w that are holes to the harness but were
	// written by someone; Reset materializes them.
	Strays(w pool.Window) ([]pool.Window, error)
	// Release makes the materialized pages of lazy windows in w, which
	// must hold their baseline, holes again.
	Release(w pool.Window) error
	// ReleaseIdle is Release for the pages none of the last age
	// Materialize calls named (every page, for age 0).
	ReleaseIdle(w pool.Window, age int) error
	// Held is how many bytes of lazy windows are materialized.
	Held() int
	// HeldIn is Held within w, of the pages ReleaseIdle(w, age) would
	// give back.
	HeldIn(w pool.Window, age int) int
	// Blocks is the allocated size: it grows when a hole is written.
	Blocks() (int64, error)
	// Reserve backs w's pages with memory now: a window the harness
	// writes itself (staging) in an arena made sparse, so that its
	// writes grow nothing a scan would take for a stray write.
	Reserve(w pool.Window) error
}

var (
	_ Lazy          = (*shm.Memory)(nil)
	_ Memory        = (*shm.Memory)(nil)
	_ Memory        = (*cudaarena.Memory)(nil)
	_ WindowScanner = (*shm.Memory)(nil)
	_ WindowScanner = (*cudaarena.Memory)(nil)
)
