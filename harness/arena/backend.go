package arena

import (
	"errors"
	"fmt"
	"os"
	"slices"

	"github.com/kvharness/kvharness/harness/arena/cudaarena"
	"github.com/kvharness/kvharness/harness/arena/shm"
	"github.com/kvharness/kvharness/harness/cuda"
	"github.com/kvharness/kvharness/harness/pool"
	"github.com/kvharness/kvharness/harness/protocol/kvpb"
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
	// (DescribeResponse.cuda_fd_arenas).
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

// OptionsOf reads the options from a plugin's description.
func OptionsOf(d *kvpb.DescribeResponse) Options {
	return Options{FDArenas: d.GetCudaFdArenas(), SparseArenas: d.GetCudaSparseArenas()}
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

// SHM is the default backend: host shared memory.
type SHM struct{}

// Place implements Backend.
func (SHM) Place() Place { return Place{Space: HostShared} }

// OrSHM is b, or SHM when b is nil: the backend of a config that names
// none.
func OrSHM(b Backend) Backend {
	if b == nil {
		return SHM{}
	}
	return b
}

// New implements Backend.
func (SHM) New(dir *rundir.Dir, size int, o Options) (Memory, error) {
	return shm.NewSparse(dir, size, o.Resident)
}

// CUDA is the device backend: arenas in GPU memory, shared with the
// plugin by file descriptor when it maps them so (Options.FDArenas), by IPC
// handle otherwise; diffed on the GPU.
type CUDA struct{ Dev *cuda.Device }

// Place implements Backend.
func (c CUDA) Place() Place { return Place{Space: Device, Device: c.Dev.Name()} }

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

// ErrBackend marks a backend that was asked for and cannot be had: a usage
// error, not a plugin fault.
var ErrBackend = errors.New("backend unavailable")

// Backends are the values of --backend.
var Backends = []string{"auto", "cpu", "cuda"}

// Choose resolves a --backend value. "auto" takes CUDA when a driver and a
// device are present and the plugin serves that backend, host shared
// memory otherwise; "cuda" insists. The returned function releases the
// device.
func Choose(name string, device int, served []kvpb.Backend) (Backend, func(), error) {
	none := func() {}
	cpuOK := slices.Contains(served, kvpb.Backend_BACKEND_SHM)
	serves := slices.Contains(served, kvpb.Backend_BACKEND_CUDA)
	switch name {
	case "cpu":
		if !cpuOK {
			return nil, none, fmt.Errorf("%w: --backend cpu: the plugin has no CPU kernel (it serves %v)", ErrBackend, served)
		}
		return SHM{}, none, nil
	case "auto", "cuda":
	default:
		return nil, none, fmt.Errorf("%w: --backend %q: want auto, cpu or cuda", ErrBackend, name)
	}
	err := cuda.Available()
	switch {
	case name == "auto" && (err != nil || !serves) && !cpuOK:
		return nil, none, fmt.Errorf("%w: the plugin serves only %v and this machine has no usable GPU (%v)", ErrBackend, served, err)
	case name == "auto" && (err != nil || !serves):
		return SHM{}, none, nil
	case err != nil:
		return nil, none, fmt.Errorf("%w: --backend cuda: %v; use --backend cpu on this machine", ErrBackend, err)
	case !serves:
		return nil, none, fmt.Errorf("%w: --backend cuda: the plugin has no CUDA kernel (it serves %v)", ErrBackend, served)
	}
	dev, err := cuda.Open(device)
	if err != nil {
		return nil, none, fmt.Errorf("%w: --backend cuda: %v", ErrBackend, err)
	}
	return CUDA{Dev: dev}, func() { dev.Close() }, nil
}
