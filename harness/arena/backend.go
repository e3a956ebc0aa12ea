package arena

import (
	"os"

	"github.com/kvharness/kvharness/harness/arena/cudaarena"
	"github.com/kvharness/kvharness/harness/arena/shm"
	"github.com/kvharness/kvharness/harness/cuda"
	"github.com/kvharness/kvharness/harness/pool"
	"github.com/kvharness/kvharness/harness/rundir"
)

// Backend makes the arenas of a run: host shared memory, or the memory of
// one GPU.
type Backend interface {
	// Place says where the backend's arenas live.
	Place() Place
	// New allocates an arena of size bytes, in dir, for a plugin that maps
	// arenas as o says.
	New(dir *rundir.Dir, size int, o Options) (Memory, error)
}

// Options are what a backend needs to know of the plugin that maps an
// arena: how its Describe said it maps device memory.
type Options struct {
	// FDArenas: the plugin imports device memory by file descriptor
	// (plugin.Description.CUDAFDArenas).
	FDArenas bool
	// Resident, when above zero and below the arena's size, is the most
	// its pages will hold: a sparse arena whose pools reach far (past
	// 4 GiB of offsets) but whose cases touch a few windows of them. Host
	// shared memory then backs only what is written (shm.NewSparse).
	Resident int
	// Backed, when set, are the only windows of such an arena the harness
	// and its cases touch: device memory backs those alone
	// (cudaarena.NewSparse), for a plugin that maps sparse arenas
	// (SparseArenas). Host shared memory ignores it.
	Backed []pool.Window
	// SparseArenas: the plugin maps a sparse CUDA arena
	// (DescribeResponse.cuda_sparse_arenas).
	SparseArenas bool
}

// Sparse reports whether backend b makes arenas of which only some
// windows are backed for a plugin with options o: host shared memory
// always (a sparse file), a GPU for a plugin that maps sparse arenas by
// file descriptor.
func Sparse(b Backend, o Options) bool {
	if _, ok := b.(CUDA); ok {
		return o.SparseArenas && Sharing(o) == cudaarena.FD
	}
	return true
}

// SHM is the host backend: host shared memory.
type SHM struct{}

// Place implements Backend.
func (SHM) Place() Place { return Place{Space: HostShared} }

// New implements Backend.
func (SHM) New(dir *rundir.Dir, size int, o Options) (Memory, error) {
	return shm.NewSparse(dir, size, o.Resident)
}

// CUDA is the device backend: arenas in GPU memory, shared with the
// plugin by file descriptor when it maps them so (Options.FDArenas), by IPC
// handle otherwise; diffed on the GPU.
type CUDA struct{ Dev *cuda.Device }

// Place implements Backend.
func (c CUDA) Place() Place {
	return Place{Space: Device, Device: c.Dev.Name(), Ordinal: c.Dev.Ordinal()}
}

// New implements Backend.
func (c CUDA) New(dir *rundir.Dir, size int, o Options) (Memory, error) {
	path := ""
	if dir != nil {
		path = dir.Path
	}
	if len(o.Backed) > 0 && Sparse(c, o) {
		return cudaarena.NewSparse(c.Dev, size, o.Backed, path)
	}
	return cudaarena.New(c.Dev, size, Sharing(o), path)
}

// Sharing is how a CUDA arena is shared with a plugin: by file descriptor
// when it maps one and cudaarena.SharingEnv does not say "ipc"; by IPC
// handle, which every SDK maps, otherwise.
func Sharing(o Options) cudaarena.Sharing {
	if o.FDArenas && os.Getenv(cudaarena.SharingEnv) != "ipc" {
		return cudaarena.FD
	}
	return cudaarena.IPC
}
