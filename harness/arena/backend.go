package arena

import (
	"os"

	"github.com/kvharness/kvharness/harness/arena/cudaarena"
	"github.com/kvharness/kvharness/harness/arena/shm"
	"github.com/kvharness/kvharness/harness/cuda"
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
}

// SHM is the host backend: host shared memory.
type SHM struct{}

// Place implements Backend.
func (SHM) Place() Place { return Place{Space: HostShared} }

// New implements Backend.
func (SHM) New(dir *rundir.Dir, size int, _ Options) (Memory, error) { return shm.New(dir, size) }

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
